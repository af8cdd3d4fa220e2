"""Checking that runs replay: Temporal's ``Replayer`` over recorded histories.

A workflow's history is the record of every decision its run made. Replaying it with the
current code must make the very same decisions; a strategy that reads the clock, draws
random numbers or changed incompatibly does not, and Temporal would fail the run's next
workflow task in production. :func:`check_determinism` finds that first, in a test or
before a deploy, and names the strategy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ptcflow.errors import PtcflowError
from ptcflow.temporal._connect import require_temporalio

if TYPE_CHECKING:
    from temporalio.client import WorkflowHistory
    from temporalio.converter import ExternalStorage

__all__ = ("NondeterministicRun", "check_determinism")


class NondeterministicRun(PtcflowError):
    """Replaying a run's history made other decisions than the run did.

    Attributes:
        run_id: the run (the workflow id).
        strategy: the import path of its strategy.
    """

    def __init__(self, message: str, *, run_id: str, strategy: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.strategy = strategy


async def check_determinism(
    histories: Iterable[WorkflowHistory],
    *,
    passthrough: Sequence[str] = (),
    storage: ExternalStorage | None = None,
) -> int:
    """Replay ``histories`` of ptcflow runs with the current code. Blocks.

    Args:
        histories: recorded histories (``await handle.fetch_history()``, or
            ``WorkflowHistory.from_json(run_id, text)`` for a saved one).
        passthrough: modules the workers let through the sandbox (the same as theirs).
        storage: the external storage the workers use, if any.

    Returns:
        How many histories replayed.

    Raises:
        NondeterministicRun: a history replayed differently; the message names the run,
            its strategy and Temporal's account of the difference.

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     history = await client.get_workflow_handle(run_id).fetch_history()
        ...     await check_determinism([history])
    """
    require_temporalio()
    from temporalio.worker import Replayer

    from ptcflow.temporal._converter import data_converter
    from ptcflow.temporal._spec import RunSpec
    from ptcflow.temporal._worker import workflow_runner
    from ptcflow.temporal._workflow import AgentWorkflow

    converter = data_converter(storage=storage)
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=converter,
        workflow_runner=workflow_runner(passthrough),
    )
    count = 0
    for history in histories:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        count += 1
        failure = result.replay_failure
        if failure is None:
            continue
        spec: Any = None
        started = history.events[0].workflow_execution_started_event_attributes
        try:
            (spec,) = await converter.decode(started.input.payloads, [RunSpec])
        except Exception:
            pass
        path, name = "?", "?"
        if isinstance(spec, RunSpec):
            path = spec.agent.path
            name = spec.name or _strategy_name(spec)
        raise NondeterministicRun(
            f"run {history.workflow_id}: strategy {name!r} ({path}) is not deterministic: "
            f"replaying its history made other decisions than the run did "
            f"({type(failure).__name__}: {failure}). A strategy must not read the clock, "
            "random numbers or the environment (time comes in on signals; ids come from the "
            "run id and counters in its state), and a change to it must keep the decisions "
            "of runs already recorded",
            run_id=history.workflow_id,
            strategy=path,
        )
    return count


def _strategy_name(spec: Any) -> str:
    """The strategy's own name (what its run's signals say), else its class's."""
    try:
        return str(getattr(spec.agent.build(), "name", "") or spec.agent.path.rsplit(":", 1)[-1])
    except Exception:
        return str(spec.agent.path.rsplit(":", 1)[-1])
