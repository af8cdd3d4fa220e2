"""A plain ``temporalio`` worker process for bench/temporal_throughput.py's baseline: the
SDK's defaults (sandboxed workflows), the plain mission's workflows and activity.

    python bench/_plain_worker.py ADDRESS TASK_QUEUE
"""

from __future__ import annotations

import asyncio
import signal
import sys

from temporalio.client import Client
from temporalio.worker import Worker

from _plain_workflows import PlainChild, PlainMission, plain_step


async def main(address: str, queue: str) -> None:
    """Poll ``queue`` until SIGINT or SIGTERM."""
    client = await Client.connect(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with Worker(
        client,
        task_queue=queue,
        workflows=[PlainMission, PlainChild],
        activities=[plain_step],
    ):
        print(f"plain worker on {queue}", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
