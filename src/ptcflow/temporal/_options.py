"""How runs are placed on Temporal: :class:`TemporalOptions` (task queues, timeouts, limits).

A frozen, validated value object, like :class:`~ptcflow.runtime.Limits`: the client passes it
with each run (it travels in the workflow's input), so every workflow of a run and its child
runs routes its activities the same way.
"""

from __future__ import annotations

import msgspec

from ptcflow.errors import ConfigError

__all__ = ("DEFAULT_TASK_QUEUE", "TemporalOptions")

DEFAULT_TASK_QUEUE = "ptcflow"
"""The task queue of workflows and of every activity not routed elsewhere."""


def _queue(field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"TemporalOptions.{field} must be a non-empty task queue name, got {value!r}"
        )


def _ms(field: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        also = " or None" if optional else ""
        raise ConfigError(f"TemporalOptions.{field} must be a positive int{also}, got {value!r}")


class TemporalOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Where and how a run's work is placed on Temporal.

    Args:
        task_queue: the queue of the run's workflows and of every activity not routed
            elsewhere (``ptcflow worker --task-queue``).
        llm_queue: the queue of model calls (``None``: ``task_queue``).
        tool_queues: tool name -> task queue, for tools that run on their own worker
            pool (a sandbox, GPUs): ``{"run_code": "sandbox"}``.
        local_tools: tools run as *local activities* on the workflow's worker: short, pure
            tools (no heartbeat, no queue; their result is still recorded in history).
        heartbeat_timeout_ms: an activity that does not heartbeat for this long is
            considered lost with its worker and is run again (activities heartbeat every
            third of it while they work).
        attempt_timeout_ms: the start-to-close timeout of one attempt of a directive that
            has no timeout of its own (a tool's ``timeout_ms``, the retry policy's
            ``attempt_timeout_ms``).
        lost_worker_retries: how many times a directive whose worker was lost, and which
            made no progress on it, is run again once its own retries are used up
            (``None``, the default: as often as its timeouts allow, as Temporal retries
            activities). An attempt that completed sub-calls its record keeps (a
            program's tool calls) made progress and is not counted; an attempt whose
            worker still answers after a server outage was not lost at all.
        worker_grace_ms: how long the worker of an attempt that stopped heartbeating is
            given to answer on its own task queue before the attempt counts as lost (a
            server outage or a network partition also stops heartbeats while the worker
            lives on: that worker then finishes the attempt, and no call in flight runs
            twice). ``None``: the heartbeat timeout, at least 5 s.
        continue_as_new_events: continue the workflow as new once its history holds this
            many events (``None``: when Temporal suggests it, about 4,000 events).
        signal_tail: how many of the latest signals a workflow carries over when it
            continues as new, for observers that are still reading them.
        max_payload_bytes: the largest payload (compressed) a directive may send or
            return: larger ones end the directive with a ``payload_too_large`` error
            instead of being refused by the server (``None``: no check, for deployments
            that keep large payloads in external storage). Temporal's own limit is 2 MB.
        max_handoffs: how many times one request's conversation may be handed from agent
            to agent (``ptcflow.handoff``), as ``Limits.max_handoffs`` locally: the
            handoff past it fails the run with ``max_handoffs_exceeded``.

    Raises:
        ConfigError: a field is out of range (the message names it).

    Example:
        >>> TemporalOptions(tool_queues={"run_code": "sandbox"}).queue_of_tool("run_code")
        'sandbox'
    """

    task_queue: str = DEFAULT_TASK_QUEUE
    llm_queue: str | None = None
    tool_queues: dict[str, str] = {}
    local_tools: frozenset[str] = frozenset()
    heartbeat_timeout_ms: int = 30_000
    attempt_timeout_ms: int = 600_000
    lost_worker_retries: int | None = None
    worker_grace_ms: int | None = None
    continue_as_new_events: int | None = None
    signal_tail: int = 2_000
    max_payload_bytes: int | None = 2_000_000
    max_handoffs: int = 8

    def __post_init__(self) -> None:
        _queue("task_queue", self.task_queue)
        if self.llm_queue is not None:
            _queue("llm_queue", self.llm_queue)
        if not isinstance(self.tool_queues, dict):
            raise ConfigError(
                f"TemporalOptions.tool_queues maps tool names to task queues, got {self.tool_queues!r}"
            )
        for name, queue in self.tool_queues.items():
            _queue(f"tool_queues[{name!r}]", queue)
        if not isinstance(self.local_tools, frozenset):
            raise ConfigError(
                "TemporalOptions.local_tools must be a frozenset of tool names, got "
                f"{self.local_tools!r}; write local_tools=frozenset({{'add'}})"
            )
        both = self.local_tools & set(self.tool_queues)
        if both:
            raise ConfigError(
                f"tools {sorted(both)} are both local_tools and routed by tool_queues: a local "
                "activity runs on the workflow's worker; choose one"
            )
        _ms("heartbeat_timeout_ms", self.heartbeat_timeout_ms)
        _ms("attempt_timeout_ms", self.attempt_timeout_ms)
        _ms("continue_as_new_events", self.continue_as_new_events, optional=True)
        _ms("worker_grace_ms", self.worker_grace_ms, optional=True)
        _ms("max_payload_bytes", self.max_payload_bytes, optional=True)
        for field in ("lost_worker_retries", "signal_tail", "max_handoffs"):
            value = getattr(self, field)
            if value is None and field == "lost_worker_retries":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"TemporalOptions.{field} must be an int >= 0, got {value!r}")

    def queue_of_tool(self, name: str) -> str:
        """The task queue of tool ``name``'s activities."""
        return self.tool_queues.get(name, self.task_queue)

    @property
    def grace_ms(self) -> int:
        """How long a silent attempt's own worker is given to answer (``worker_grace_ms``)."""
        if self.worker_grace_ms is not None:
            return self.worker_grace_ms
        return max(self.heartbeat_timeout_ms, 5_000)

    @property
    def model_queue(self) -> str:
        """The task queue of model calls."""
        return self.llm_queue or self.task_queue
