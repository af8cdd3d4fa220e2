"""A run's child workflows, inside the ``ptcflow.run`` workflow: :class:`Family`.

Two kinds of directive start a child run, each a child workflow (id ``{run id}/{call
id}``, the same as a local child run's; cancelled with its parent: ``REQUEST_CANCEL``):

* ``RunChild``: a strategy's child run, of one of the run's ``agents``;
* a call of an agent used as a tool (``SubAgent.as_tool``, an ``LLMTool``): a ``ToolExec``
  of a ReAct or JSON-mode run, or a suspended program's pending call. The child's strategy,
  tools and name were planned on the client (:class:`~ptcflow.temporal._spec.AgentTool`);
  the call's arguments are checked by the tool's signature and become the child's context,
  and its Step becomes the call's result as locally (``call_result``).

A mission's shared state lives here: its turn budget (a :class:`Mission`, counted as the
local ``BudgetedLLM`` counts it: a model call takes a turn, a failed one gives it back),
handed down to each child with the turns used so far and counted up from the child's
result; and the Steps of the agents called, attached to the run's trace at its end as
``Lineage.finish`` does. Only ``temporalio.workflow`` and asyncio.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from temporalio import workflow
from temporalio.exceptions import CancelledError, ChildWorkflowError

from ptcflow.agent import MissionLimits
from ptcflow.agent.lowlevel import (
    Mission,
    attach_children,
    call_result,
    filtered_history,
    handoff_result,
    past_max_handoffs,
    resolve_context,
)
from ptcflow.core import journal_safe
from ptcflow.directives import Directive, RunChild, ToolExec
from ptcflow.errors import UsageError
from ptcflow.runtime import ProviderError, Step, UsageMeter
from ptcflow.runtime.lowlevel import invalid_child_arguments
from ptcflow.sessions import check_history, remove_all_tools
from ptcflow.signals import (
    INTERNAL,
    TOOL_RESULT,
    UNKNOWN_TOOL,
    VALIDATION,
    Err,
    ErrorEnvelope,
    HandoffData,
    Message,
    Ok,
    ToolResultData,
)
from ptcflow.signature import Signature, parse
from ptcflow.temporal._activities import PAYLOAD_TOO_LARGE
from ptcflow.temporal._filters import FILTER_TOOL, run_input_filter
from ptcflow.temporal._placement import failure_of, perform_activity, place
from ptcflow.temporal._refs import ToolRef, path_of
from ptcflow.temporal._spec import (
    ActivityCall,
    AgentTool,
    GuardPlan,
    MissionBudget,
    RunResult,
    RunSpec,
    Typed,
    UsageBudget,
    decode_lines,
    payload_size,
)

__all__ = ("RUN_WORKFLOW", "Family")

RUN_WORKFLOW = "ptcflow.run"
"""The workflow type of a run (its child runs too)."""


def _now() -> float:
    return workflow.now().timestamp()


class Family:
    """The child workflows of one run and its mission's shared state (see the module
    docstring).

    Args:
        spec: the run's spec.
        request_id: the run's request id (a child's, unless its directive has one).
        add_child: tells the run's observers that a child workflow started.
    """

    def __init__(self, spec: RunSpec, request_id: str | None, add_child: Callable[[str], None]):
        self.spec = spec
        self.request_id = request_id
        self.add_child = add_child
        self.agent_tools: dict[str, AgentTool] = {t.name: t for t in spec.agent_tools}
        self.mission: Mission | None = None
        self.base = 0
        if spec.mission is not None:
            self.mission = Mission(MissionLimits(turn_budget=spec.mission.turn_budget))
            self.mission.turns_used = self.base = spec.mission.used
        self.steps: dict[str, Step] = {}
        """The Steps of the agents this run called, by call id (for its trace)."""
        self.meter: UsageMeter | None = None
        """The run tree's usage budget as this workflow counts it (``usage_limits=``)."""
        if spec.usage is not None:
            self.meter = _meter(spec.usage)
        self._signatures: dict[str, Signature] = {}
        self._salvaged: dict[tuple[str, bytes], bytes] = {}
        """The records of agent calls whose runs failed with lost workers, by tool and
        arguments: the next identical call's run starts with it."""

    @property
    def turns_used(self) -> int:
        """The mission's model calls so far (0 outside a mission)."""
        return 0 if self.mission is None else self.mission.turns_used

    def resume(
        self, turns_used: int, steps: Mapping[str, Step], usage: UsageBudget | None = None
    ) -> None:
        """What the previous execution counted (continue-as-new)."""
        if self.mission is not None:
            self.mission.turns_used = turns_used
        self.steps.update(steps)
        if usage is not None:
            self.meter = _meter(usage)

    def usage_now(self) -> UsageBudget | None:
        """The tree's budget and what it used so far (``None``: the run has none)."""
        meter = self.meter
        if meter is None:
            return None
        used = meter.usage
        return UsageBudget(
            limits=meter.limits,
            requests=meter.requests,
            tool_calls=meter.tool_calls,
            input_tokens=used.input_tokens,
            output_tokens=used.output_tokens,
            cost_usd=meter.cost_usd,
        )

    def _absorb(self, handed: UsageBudget | None, result: RunResult) -> None:
        """Count what a child workflow (and its own children) used since ``handed``."""
        meter, back = self.meter, result.usage_used
        if meter is None or handed is None or back is None:
            return
        meter.add_counts(
            requests=back.requests - handed.requests,
            tool_calls=back.tool_calls - handed.tool_calls,
            input_tokens=back.input_tokens - handed.input_tokens,
            output_tokens=back.output_tokens - handed.output_tokens,
        )
        meter.cost_usd += back.cost_usd - handed.cost_usd

    def take_turn(self, agent: str) -> ErrorEnvelope | None:
        """Count a model call of ``agent``; the error that answers it once the mission's
        budget is spent (``turn_budget_exceeded``, as locally)."""
        if self.mission is None:
            return None
        try:
            self.mission.take_turn(agent)
        except ProviderError as exc:
            return exc.envelope
        return None

    def give_back(self) -> None:
        """A counted model call failed: it used no turn."""
        if self.mission is not None:
            self.mission.give_back()

    def finish(self, step: Step) -> Step:
        """The run's Step with the Steps of the agents it called on its trace."""
        return attach_children(step, self.steps)

    # -- child runs -------------------------------------------------------------------------

    async def run_child(
        self, d: RunChild, deadline: float, traceparent: str | None
    ) -> Ok[Any] | Err:
        """A strategy's ``RunChild``: its result (``Ok`` / ``Err``), or the failure's
        ``Err``."""
        spec = self.spec
        agent = spec.agents.get(d.agent)
        if agent is None:
            known = ", ".join(spec.agents) or "none"
            return _error(
                UNKNOWN_TOOL,
                f"RunChild {d.id!r} names agent {d.agent!r}, which this run does not have; "
                f"agents: {known} (pass agents={{name: strategy}} to rt.run)",
            )
        if d.timeout_ms is not None:
            deadline = min(deadline, _now() + d.timeout_ms / 1000.0)
        child = msgspec.structs.replace(
            spec,
            agent=agent,
            input=d.input,
            run_id=f"{spec.run_id}/{d.id}",
            request_id=d.request_id or self.request_id,
            parent_run_id=spec.run_id,
            name=d.agent,
            deadline=None if deadline == math.inf else deadline,
            record=False,
            traceparent=traceparent,
            checkpoint=None,
            usage=self.usage_now(),
            guards=_child_guards(spec),
        )
        result = await self._execute(d, child)
        if isinstance(result, Err):
            return result
        self._absorb(child.usage, result)
        step = result.step
        if step.ok:
            return journal_safe(Ok(payload=step.value))
        return Err(error=step.error or _unknown())

    async def agent_call(
        self, call: ToolExec, *, from_program: bool, deadline: float, traceparent: str | None
    ) -> Ok[Any] | Err:
        """A call of an agent used as a tool: its arguments checked, the agent run as a
        child workflow, its Step made the call's result (see the module docstring)."""
        plan = self.agent_tools.get(call.tool_name)
        if plan is None:  # the workflow only sends the calls of its agent tools here
            return _error(INTERNAL, f"tool {call.tool_name!r} is no agent of this run")
        if plan.error is not None:
            return Err(error=plan.error)
        values = self._context(plan, call.arguments)
        if isinstance(values, Err):
            return values
        assert plan.strategy is not None
        if plan.timeout is not None:
            deadline = min(deadline, _now() + plan.timeout)
        mission = self.mission
        budget = self._budget(plan)
        spec = self.spec
        key = (call.tool_name, _ENCODER.encode(values))
        child = RunSpec(
            salvage=self._salvaged.pop(key, None),
            agent=plan.strategy,
            input=values,
            run_id=f"{spec.run_id}/{call.id}",
            request_id=call.request_id or self.request_id,
            parent_run_id=spec.run_id,
            name=plan.run_name,
            tools=plan.tools,
            tool_specs=plan.tool_specs,
            agent_tools=plan.agent_tools,
            deadline=None if deadline == math.inf else deadline,
            options=spec.options,
            retry=spec.retry,
            observe=spec.observe,
            traceparent=traceparent,
            mission=budget,
            usage=self.usage_now(),
            guards=_child_guards(spec),
        )
        result = await self._execute(call, child)
        if isinstance(result, Err):
            return result
        self._absorb(child.usage, result)
        if result.salvage is not None:
            self._salvaged[key] = result.salvage
        if mission is not None:  # the child's model calls, and its own children's
            mission.turns_used += result.turns_used - budget.used
        step = result.step
        if spec.mission is not None and step.trace is not None:
            self.steps[call.id] = step
        return call_result(plan.agent, step, from_program=from_program)

    async def handoff_call(
        self,
        call: ToolExec,
        conversation: tuple[Message, ...],
        *,
        caller: str,
        from_program: bool,
        deadline: float,
        traceparent: str | None,
        emit: Callable[[HandoffData], None],
    ) -> Ok[Any] | Err:
        """A call of a handoff tool: the next agent run as a child workflow on the
        conversation (through the handoff's filter), ``ai.handoff`` emitted before it
        starts; the result a strategy ends its run with (as locally: ``handoff_result``)."""
        plan = self.agent_tools[call.tool_name]
        if plan.error is not None:
            return Err(error=plan.error)
        spec = self.spec
        name = plan.handoff
        chain = (*spec.handoffs, caller)
        refused = past_max_handoffs(
            plan.name,
            caller,
            chain,
            name,
            spec.options.max_handoffs,
            setting="TemporalOptions.max_handoffs",
            raise_it="TemporalRuntime(options=TemporalOptions(max_handoffs=...))",
        )
        if refused is not None:
            return refused
        history = filtered_history(
            conversation,
            call_id=call.id,
            tool_name=plan.name,
            agent=name,
            input_filter=remove_all_tools if plan.input_filter == "remove_all_tools" else None,
        )
        if isinstance(history, Err):
            return history
        if plan.filter_path:  # your own filter: a worker runs it
            history = await self._filter_on_worker(call, plan, history, deadline)
            if isinstance(history, Err):
                return history
        input: Any = {"continue": True}
        if not plan.continues:
            values = self._context(plan, call.arguments)
            if isinstance(values, Err):
                return values
            input = values
        assert plan.strategy is not None
        if plan.timeout is not None:
            deadline = min(deadline, _now() + plan.timeout)
        mission = self.mission
        budget = self._budget(plan)
        own = not plan.caller_tools
        child = RunSpec(
            agent=plan.strategy,
            input=input,
            run_id=f"{spec.run_id}/{call.id}",
            request_id=call.request_id or self.request_id,
            parent_run_id=spec.run_id,
            name=plan.run_name,
            tools=plan.tools if own else spec.tools,
            tool_specs=plan.tool_specs if own else spec.tool_specs,
            agent_tools=plan.agent_tools if own else spec.agent_tools,
            agents=spec.agents,
            deadline=None if deadline == math.inf else deadline,
            options=spec.options,
            retry=spec.retry,
            observe=spec.observe,
            traceparent=traceparent,
            mission=None if plan.continues else budget,
            history=history,
            handoffs=chain,
            guards=_child_guards(spec),
        )
        too_large = _too_large(child, spec, f"handoff {plan.name!r} to {name!r}")
        if too_large is not None:
            return too_large
        emit(
            HandoffData(
                from_agent=caller,
                to_agent=plan.run_name or name,
                tool_name=plan.name,
                messages=len(history),
                chain=chain,
            )
        )
        result = await self._execute(call, child)
        if isinstance(result, Err):
            return result
        if mission is not None and not plan.continues:
            mission.turns_used += result.turns_used - budget.used
        return handoff_result(name, result.step, sent=len(history), from_program=from_program)

    async def _filter_on_worker(
        self, call: ToolExec, plan: AgentTool, history: tuple[Message, ...], deadline: float
    ) -> tuple[Message, ...] | Err:
        """``history`` through the handoff's own input filter, run by a worker (an
        activity: the filter is user code), checked as locally."""
        spec = self.spec
        ref = ToolRef(name=FILTER_TOOL, path=_RUN_FILTER, blocking=True)
        d = ToolExec(
            id=f"{call.id}/filter",
            tool_name=FILTER_TOOL,
            arguments={"filter": plan.filter_path, "messages": msgspec.to_builtins(history)},
            request_id=call.request_id,
            iteration=call.iteration,
            max_retries=0,
        )
        where = place(spec, {FILTER_TOOL: ref}, d, _now(), deadline)
        activity = ActivityCall(
            directive=Typed.of(d),
            run_id=spec.run_id,
            parent_run_id=spec.parent_run_id,
            tool=ref,
            max_attempts=where.max_attempts,
            max_payload_bytes=spec.options.max_payload_bytes,
        )
        too_large = _too_large(activity, spec, f"the input filter of handoff {plan.name!r}")
        if too_large is not None:
            return too_large
        outcome = await perform_activity(d, activity, where, spec.options)
        label = plan.filter_path.rpartition(":")[2]
        where_ = f"handoff {plan.name!r} (to {plan.handoff!r}): the input filter {label!r}"
        result: Any = outcome.error and Err(error=outcome.error)
        for signal in decode_lines(outcome.signals):
            if signal.type == TOOL_RESULT and isinstance(signal.data, ToolResultData):
                result = signal.data.result
        if not isinstance(result, Ok):
            error = result.error if isinstance(result, Err) else _unknown()
            return _error(VALIDATION, f"{where_} failed on the worker: {error.message}")
        try:
            return check_history(msgspec.convert(result.payload, tuple[Message, ...]))
        except (UsageError, msgspec.ValidationError) as exc:
            return _error(
                VALIDATION,
                f"{where_} returned a history the next agent cannot continue: {exc}. Keep "
                "every tool call with its result (or drop both)",
            )

    def _budget(self, plan: AgentTool) -> MissionBudget:
        """The turn budget a child run of ``plan`` starts with: the mission's, shared
        (with what it used so far), or the agent's own when the run is no mission."""
        mission = self.mission
        if mission is not None:
            return MissionBudget(turn_budget=mission.limits.turn_budget, used=mission.turns_used)
        return MissionBudget(turn_budget=plan.turn_budget)

    def _context(self, plan: AgentTool, arguments: Any) -> dict[str, Any] | Err:
        """The child's context: the arguments checked by the tool's signature, as a
        local call of the tool checks them."""
        if not isinstance(arguments, Mapping):
            got = type(arguments).__name__
            return _invalid(plan, [f"takes a map of named arguments, got {got}"])
        values = dict(arguments)
        if plan.signature is not None:
            signature = self._signatures.get(plan.name)
            if signature is None:
                signature = self._signatures[plan.name] = parse(plan.signature)
            checked = signature.validate_input(values, "enabled")
            if not checked.ok:
                return _invalid(plan, checked.errors)
            values = dict(checked.value)
        try:
            context, _ = resolve_context(values, None)
        except UsageError as exc:
            return Err(
                error=ErrorEnvelope.make(
                    VALIDATION,
                    f"tool {plan.name!r}: {exc}",
                    {"agent": plan.agent},
                    retryable=False,
                )
            )
        return context

    async def _execute(self, d: Directive, child: RunSpec) -> RunResult | Err:
        self.add_child(child.run_id)
        try:
            result: RunResult = await workflow.execute_child_workflow(
                RUN_WORKFLOW,
                child,
                id=child.run_id,
                result_type=RunResult,
                task_queue=self.spec.options.task_queue,
                cancellation_type=workflow.ChildWorkflowCancellationType.TRY_CANCEL,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            )
        except ChildWorkflowError as exc:
            if isinstance(exc.cause, CancelledError):  # we cancelled it: the reason is ours
                raise asyncio.CancelledError from None
            return failure_of(d, exc, 0)
        return result


_ENCODER = msgspec.json.Encoder(order="sorted")
_RUN_FILTER = path_of(run_input_filter, "the input filter runner")


def _too_large(payload: Any, spec: RunSpec, what: str) -> Err | None:
    """The ``payload_too_large`` error of sending ``payload`` (a conversation) past the
    run's ``max_payload_bytes``, or ``None``."""
    limit = spec.options.max_payload_bytes
    if limit is None:
        return None
    size = payload_size(payload, limit)
    if size <= limit:
        return None
    return _error(
        PAYLOAD_TOO_LARGE,
        f"{what}: the conversation takes {size} bytes compressed, more than the {limit} "
        "bytes a Temporal history event may hold: compact it (Compaction), filter it "
        "(input_filter=remove_all_tools), or keep large payloads in external storage "
        "(see docs/temporal.md, Limits)",
    )


def _child_guards(spec: RunSpec) -> GuardPlan | None:
    """The guards a child run of ``spec``'s run keeps: its tool guards (as a local child
    run does: its input and output guards are its parent's own)."""
    guards = spec.guards
    if guards is None or not guards.tool:
        return None
    return GuardPlan(tool=guards.tool, timeout_s=guards.timeout_s)


def _meter(budget: UsageBudget) -> UsageMeter:
    meter = UsageMeter(budget.limits)
    meter.add_counts(
        requests=budget.requests,
        tool_calls=budget.tool_calls,
        input_tokens=budget.input_tokens,
        output_tokens=budget.output_tokens,
    )
    meter.cost_usd = budget.cost_usd
    return meter


def _invalid(plan: AgentTool, errors: list[str]) -> Err:
    return invalid_child_arguments(plan.name, plan.expected, errors)


def _error(kind: str, message: str) -> Err:
    return Err(error=ErrorEnvelope.make(kind, message, retryable=False))


def _unknown() -> ErrorEnvelope:
    return ErrorEnvelope.make(INTERNAL, "the child run failed without an error")
