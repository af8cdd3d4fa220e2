"""Following a run's signals from a client: the signals query, polled, children included."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from ptcflow.signals import Signal, decode_signal

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = ("follow_signals",)


async def follow_signals(
    client: Client,
    run_id: str,
    publish: Callable[[Signal], None],
    *,
    finished: Callable[[], bool],
    interval: float = 0.1,
) -> None:
    """Publish the signals of run ``run_id`` and of its child runs as they appear, in
    ``seq`` order per run, until the runs are done and every signal was published.

    ``finished()`` says the client has the run's result (the last drain follows).
    """
    from temporalio.service import RPCError

    from ptcflow.temporal._spec import SignalPage
    from ptcflow.temporal._workflow import SIGNALS_QUERY

    after: dict[str, int] = {run_id: 0}
    done: set[str] = set()
    while True:
        ending = finished()
        progressed = False
        for rid in list(after):
            if rid in done:
                continue
            handle = client.get_workflow_handle(rid)
            try:
                page: SignalPage = await handle.query(
                    SIGNALS_QUERY, after[rid], result_type=SignalPage
                )
            except RPCError:
                continue  # not started yet, or the server is away for a moment
            for line in page.signals:
                signal = decode_signal(bytes(line))
                after[rid] = signal.seq
                publish(signal)
                progressed = True
            for child in page.children:
                after.setdefault(child, 0)
            if page.done and not page.signals:
                done.add(rid)
        if ending and len(done) == len(after):
            return
        if not progressed:
            await anyio.sleep(interval)
