"""The result of one run: :class:`Step`."""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.errors import RunError
from ptcflow.signals import ErrorEnvelope, Signal, Usage

__all__ = ("Step",)


class Step(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """How a run ended.

    Attributes:
        run_id: the run's id (every signal of the run carries it).
        ok: True when the run completed with a value.
        value: the answer (the ``Ok`` payload of the strategy's outcome) or ``None``.
        error: the :class:`~ptcflow.signals.ErrorEnvelope` of a failed run, else ``None``.
        usage: tokens used by every LLM call of the run (child runs not included).
        reason: why the run stopped (``"completed"``, ``"max_iterations"``, ``"cancelled"``...).
        turns: LLM calls performed.
        tool_calls: tool calls answered (``ToolExec``, ``EmitToolError``, child runs).
        duration_ms: wall time of the run.
        signals: every signal of the run, in ``seq`` order, when it was started with
            ``record=True``; otherwise empty.

    Example:
        >>> Step(run_id="r", ok=True, value=5).unwrap()
        5
    """

    run_id: str
    ok: bool
    value: Any = None
    error: ErrorEnvelope | None = None
    usage: Usage = Usage()
    reason: str = ""
    turns: int = 0
    tool_calls: int = 0
    duration_ms: float = 0.0
    signals: tuple[Signal, ...] = ()

    def unwrap(self) -> Any:
        """Return :attr:`value`, or raise :class:`~ptcflow.errors.RunError` if the run failed.

        Raises:
            RunError: the run failed; ``.error`` holds its envelope.
        """
        if self.ok:
            return self.value
        err = self.error
        text = f"{err.type}: {err.message}" if err is not None else "the run failed"
        raise RunError(f"run {self.run_id} failed: {text}", err)
