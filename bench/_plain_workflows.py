"""The plain ``temporalio`` baseline of bench/temporal_throughput.py's missions: workflows
and an activity with nothing of ptcflow (the sandbox imports this module for each run)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="bench.plain_step")
async def plain_step(x: int) -> int:
    """An empty activity."""
    return x + 1


@workflow.defn(name="bench.plain_child")
class PlainChild:
    """The plain baseline's child workflow: two activities."""

    @workflow.run
    async def run(self, x: int) -> int:
        """Two activities."""
        for _ in range(2):
            x = await workflow.execute_activity(
                plain_step, x, start_to_close_timeout=timedelta(seconds=30)
            )
        return x


@workflow.defn(name="bench.plain_mission")
class PlainMission:
    """The plain baseline of a mission, shaped as ptcflow's: two activities, a child
    workflow of two, one more activity (five activities, one child workflow)."""

    @workflow.run
    async def run(self, x: int) -> int:
        """The mission's shape."""
        for _ in range(2):
            x = await workflow.execute_activity(
                plain_step, x, start_to_close_timeout=timedelta(seconds=30)
            )
        x = await workflow.execute_child_workflow(
            PlainChild.run, x, id=f"{workflow.info().workflow_id}/child"
        )
        return await workflow.execute_activity(
            plain_step, x, start_to_close_timeout=timedelta(seconds=30)
        )
