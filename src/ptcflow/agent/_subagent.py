"""``SubAgent``: an agent as data (the spec's ``SubAgent.new``).

A SubAgent is a frozen definition, validated when it is created and reusable across runs
and tasks: the task prompt, the signature, the tools, the turn budget and options. The
system prompt that depends only on the definition is rendered once, here. Planning and
running it is the job of :mod:`ptcflow.agent._plan`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from ptcflow.agent._as_tool import agent_tool
from ptcflow.agent._mission import MissionLimits
from ptcflow.agent._model import LLMRetry, model_kind
from ptcflow.agent._plan import SubAgentError, execute, plan, stream_run
from ptcflow.agent.compiled._compile import compile_agent
from ptcflow.errors import ConfigError, UsageError
from ptcflow.runtime import RunOptions, UsageLimits
from ptcflow.runtime.lowlevel import Toolbox, in_event_loop
from ptcflow.sessions import Compaction, Session, Summary
from ptcflow.signals import ErrorEnvelope, ProgramMemory
from ptcflow.signature import (
    ConversionError,
    Converter,
    Prim,
    Signature,
    SignatureError,
    Template,
    check_placeholders,
    format_notes,
    parse,
    render_type,
    schema_from_hint,
    type_from_hint,
    type_path,
)
from ptcflow.strategies import PTC, JsonAgent, PromptLimit, ToolInfo
from ptcflow.strategies.ptc import example_call, static_prompt
from ptcflow.tools import Tool, describe_tool, for_agent, render_tool_signature

if TYPE_CHECKING:
    from ptcflow.agent.compiled._agent import CompiledAgent
    from ptcflow.core import Decision, PausedRun
    from ptcflow.runtime import EventStream, Runtime, Step

__all__ = ("SubAgent",)

_OUTPUTS: Final = ("ptc", "json")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class SubAgent:
    """An agent that solves a task by writing PTC-Lisp programs (or JSON answers).

    Creating one calls no model: it checks the definition and renders the static part of
    its system prompt. Run it with :meth:`run` (or :meth:`run_sync`, :meth:`run_or_raise`,
    :meth:`then`, or the module functions of :mod:`ptcflow.agent`).

    Args:
        prompt: the task, a template: ``{{name}}``, ``{{user.name}}``,
            ``{{#items}}...{{/items}}`` are filled from the run's context.
        signature: the contract, ``"(user :string) -> {count :int, _ids [:int]}"``;
            every placeholder must name one of its parameters; ``return`` must match its
            output. ``None`` accepts any value.
        tools: what programs may call: functions, :class:`~ptcflow.tools.Tool`,
            ``(function, "signature")`` pairs, ``{"name": function}`` mappings, tool
            sources (see :func:`ptcflow.tools.for_agent`). ``return`` and ``fail`` are
            reserved.
        max_turns: model calls allowed (default 5). With no tools and ``max_turns=1`` the
            agent is in judgment mode: the program's value is the answer.
        tool_catalog: tools shown for planning only ("do not call").
        prompt_limit: a :class:`~ptcflow.strategies.PromptLimit` (or a mapping of its
            fields): how much of values, prints and samples the model sees.
        mission_timeout: milliseconds for the whole run (``None``: the Runtime's default).
        llm_retry: an :class:`LLMRetry` (or a mapping: ``max_attempts``, ``backoff``,
            ``base_ms``, ``retryable_errors``): retries of failed model calls.
        llm: this agent's model, used over the one given to ``run``: a provider, a model
            string or registry alias (``"openai:gpt-4.1-mini"``, ``"haiku"``), or a
            function taking the LLM-callback input.
        name: the agent's name (spans, logs, the Step's run).
        description: what the agent does (for catalogs and parent agents).
        output: ``"ptc"`` (PTC-Lisp programs) or ``"json"`` (one JSON answer validated
            against the signature, tools called natively; for models that cannot write
            Lisp).
        memory_limit: the most bytes of memory (kept values and functions) a run may hold
            (default 1 MB); going over ends the run as failed (``memory_limit``).
        program_limits: overrides of :class:`ptcflow.lisp.Limits` for every program
            (``{"timeout_ms": 2000}``).
        output_type: the answer as a Python type: a dataclass, ``msgspec.Struct``,
            ``TypedDict``, pydantic model, ``list[...]`` of them, an ``Enum``, a date...
            The signature's output is derived from it (the prompt shows the compact
            form), the returned value must fit it (its validators' errors go back to the
            model), and ``step.value`` is an instance. Give it at module level when runs
            cross a process (Temporal workers import it by name).
        stream: stream every run (as ``run(stream=True)`` does): the program text as
            ``ai.llm.delta`` signals while the model writes it, the program's output as
            ``ai.program.print`` as it prints; the agents it calls stream too. See
            :meth:`run_stream` and docs/streaming.md.

    Raises:
        UsageError: the definition is wrong (the message says where and how to fix it):
            a placeholder that is not a signature parameter, a reserved tool name, an
            option of the wrong type, a signature that does not parse.

    Example:
        >>> finder = SubAgent(
        ...     prompt="Find urgent emails for {{user}}",
        ...     signature="(user :string) -> {count :int, _ids [:int]}",
        ...     max_turns=5,
        ... )
        >>> finder
        SubAgent(name='subagent', prompt='Find urgent emails for {{user}}', signature='(user :string) -> {count :int, _ids [:int]}', tools=[], max_turns=5)
    """

    prompt: str
    signature: str | None = None
    tools: Any = None
    max_turns: int = 5
    tool_catalog: Any = None
    prompt_limit: Any = None
    mission_timeout: int | None = None
    llm_retry: Any = None
    llm: Any = None
    name: str = "subagent"
    description: str = ""
    output: str = "ptc"
    memory_limit: int = 1_000_000
    program_limits: Any = None
    output_type: Any = None
    stream: bool = False
    _system: tuple[str, str] = dataclasses.field(init=False, default=("", ""))
    _typed: Converter | None = dataclasses.field(init=False, default=None)
    _type_path: str | None = dataclasses.field(init=False, default=None)
    _signature: Signature | None = dataclasses.field(init=False, default=None)
    _toolbox: Toolbox | None = dataclasses.field(init=False, default=None)
    _strategy: PTC | JsonAgent | None = dataclasses.field(
        init=False, default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        where = f"SubAgent({self.name!r})"
        _check(
            isinstance(self.prompt, str) and self.prompt.strip(),
            where,
            "prompt must be a non-empty string",
        )
        _check(
            isinstance(self.name, str) and self.name.strip(),
            where,
            "name must be a non-empty string",
        )
        _check(isinstance(self.description, str), where, "description must be a string")
        _check(
            isinstance(self.stream, bool),
            where,
            f"stream must be True or False, got {self.stream!r}",
        )
        _check(
            _positive(self.max_turns),
            where,
            f"max_turns must be an integer >= 1, got {self.max_turns!r}",
        )
        _check(
            _positive(self.memory_limit),
            where,
            f"memory_limit must be an integer >= 1, got {self.memory_limit!r}",
        )
        _check(
            self.mission_timeout is None or _positive(self.mission_timeout), where,
            f"mission_timeout must be milliseconds (an integer >= 1) or None, got {self.mission_timeout!r}",
        )  # fmt: skip
        _check(
            self.output in _OUTPUTS, where, f'output must be "ptc" or "json", got {self.output!r}'
        )
        _check(
            self.llm is None or model_kind(self.llm) is not None,
            where, "llm must be a provider, a model name or alias, or a function, "
            f"got {type(self.llm).__name__}",
        )  # fmt: skip
        if self.output_type is not None:
            self._set_output_type(where)
        sig = parse(self.signature) if self.signature is not None else None
        Template(self.prompt)  # malformed templates raise here, with a caret
        if sig is not None:
            problems = check_placeholders(self.prompt, sig)
            _check(not problems, where, "; ".join(problems) + f" (signature: {self.signature})")
        setattr_ = object.__setattr__
        setattr_(self, "_signature", sig)
        tools = _tools(self.tools, where, "tools")
        setattr_(self, "tools", MappingProxyType(dict(tools)))
        setattr_(self, "_toolbox", Toolbox(dict(tools)))  # the runs' tools, built once
        setattr_(
            self,
            "tool_catalog",
            MappingProxyType(dict(_tools(self.tool_catalog, where, "tool_catalog"))),
        )
        setattr_(self, "prompt_limit", _prompt_limit(self.prompt_limit, where))
        setattr_(self, "llm_retry", LLMRetry.of(self.llm_retry))
        limits = dict(self.program_limits or {})
        if limits:
            from ptcflow.lisp import Limits

            try:
                Limits(**limits)
            except TypeError as exc:
                raise ConfigError(f"{where}: program_limits: {exc}") from None
        setattr_(self, "program_limits", MappingProxyType(limits))
        if self.output == "ptc":
            setattr_(self, "_system", self._static_prompt(sig))
        # the strategy of a run with the default options, built once (most runs use it)
        setattr_(self, "_strategy", self.strategy())

    def _set_output_type(self, where: str) -> None:
        hint = self.output_type
        try:
            node = type_from_hint(hint)
        except SignatureError as exc:
            raise ConfigError(f"{where}: output_type: {exc.reason}") from None
        if self.signature is None:
            text = render_type(node)
        else:
            text = self.signature
            if isinstance(text, str) and "->" not in text and text.rstrip().endswith(")"):
                text += " -> :any"  # the parameters only: output_type gives the output
            given = parse(text)
            if given.output != Prim(name="any") and given.output != node:
                raise ConfigError(
                    f"{where}: the signature's output {render_type(given.output)} and "
                    f"output_type ({render_type(node)}) disagree: give the output once "
                    "(drop the '-> ...' part of the signature)"
                )
            text = msgspec.structs.replace(given, output=node).render()
        setattr_ = object.__setattr__
        setattr_(self, "signature", text)
        setattr_(self, "_typed", Converter(hint))
        if isinstance(hint, type):
            setattr_(self, "_type_path", type_path(hint))

    def typed(self, step: Step) -> Step:
        """``step`` with its plain value built into :attr:`output_type` (as it is when the
        agent has none, or the run failed).

        Runs that were recorded or ran elsewhere (a journal, a Temporal handle) carry the
        plain value; this gives the typed one back.

        Returns:
            The Step; a failed one (``validation``) when the value does not fit.
        """
        conv = self._typed
        if conv is None or not step.ok:
            return step
        try:
            value = conv.load(step.value)
        except ConversionError as exc:
            error = ErrorEnvelope.make(
                "validation",
                f"SubAgent({self.name!r}): the answer does not fit output_type: {exc}",
                {"where": "output", "errors": [str(exc)]},
                retryable=False,
            )
            return msgspec.structs.replace(step, ok=False, error=error, reason="validation")
        return msgspec.structs.replace(step, value=value)

    # -- running ------------------------------------------------------------------------

    async def run(
        self,
        *,
        llm: Any = None,
        context: Any = None,
        llm_opts: Mapping[str, Any] | None = None,
        context_signature: str | None = None,
        debug: bool = False,
        trace: bool | str = True,
        signature_validation: str = "enabled",
        runtime: Runtime | None = None,
        run_id: str | None = None,
        record: bool = False,
        mission_limits: MissionLimits | Mapping[str, Any] | None = None,
        usage_limits: UsageLimits | None = None,
        history: Sequence[Any] = (),
        session: Session | None = None,
        memory: ProgramMemory | None = None,
        compaction: Compaction | None = None,
        summary: Summary | None = None,
        stream: bool | None = None,
    ) -> Step:
        """Run the agent once and return its :class:`~ptcflow.runtime.Step`. Blocks.

        Failures inside the run (the model gave up, a turn budget ran out, the model
        call failed) do not raise: ``step.ok`` is false and ``step.fail`` says why.

        Args:
            llm: the model when the agent has none (``SubAgent(llm=...)`` wins): a
                provider, a model name or alias, or a function taking the LLM-callback
                input. May be left out when ``runtime`` has one.
            context: the data programs read as ``ctx/key`` (a mapping of plain data), or
                a successful :class:`Step`, whose value and output signature are used.
            llm_opts: provider options of every model call (``{"temperature": 0}``).
            context_signature: the types of the context's keys, as a signature
                (``"(orders [{id :int}]) -> :any"``); set from a Step given as context.
            debug: keep each turn's parsed program, ``ctx/`` and memory in the trace.
            trace: keep the turn trace: ``True`` (default), ``"on_error"`` or ``False``.
            signature_validation: how ``return`` is checked: ``"enabled"`` (default;
                extra fields allowed), ``"warn_only"``, ``"disabled"`` or ``"strict"``.
            runtime: an open :class:`~ptcflow.runtime.Runtime` to run on (its limits,
                telemetry and bus are shared by every run on it); default: a temporary one.
            run_id: the run's id.
            record: keep the run's signals on ``step.signals``.
            mission_limits: the :class:`~ptcflow.MissionLimits` (or a mapping of them) of
                the mission this run starts when its tools include agents: nesting depth
                and a turn budget shared by every agent it calls (default: depth 3, 20
                turns).
            usage_limits: the :class:`~ptcflow.UsageLimits` (tokens, requests, tool calls,
                cost) of the run and every agent it calls, together.
            history: the conversation so far (an earlier ``step.messages``); the run's
                ``step.messages`` continues it. A PTC-Lisp agent reads the last questions
                and answers at the top of its task; ``output="json"`` gets the messages.
            session: a :class:`~ptcflow.Session` to continue: its messages are the
                history (and its programs' memory the starting memory), the run's own are
                stored as its next turn.
            memory: what earlier programs of the conversation kept (an earlier
                ``step.memory``); ``ProgramMemory()`` to start keeping it.
            compaction: a :class:`~ptcflow.sessions.Compaction`: past its limit, the
                history sent shrinks (the older turns summarized or left out of the task;
                default: the session's).
            summary: an earlier ``step.summary`` for the compaction to reuse.
            stream: stream the run (``None``: the definition's :attr:`stream`): the
                model's text as ``ai.llm.delta`` signals, each program's output as
                ``ai.program.print``, on the Runtime's bus; the agents it calls stream
                too. To read them: :meth:`run_stream` (or ``rt.stream``).

        Returns:
            The Step: ``value`` (the returned value), ``fail``, ``usage``, ``turns``,
            ``duration_ms``, ``trace`` and ``signature``.

        Raises:
            UsageError: no LLM anywhere, a context that is not a mapping of plain data,
                a failed Step as context, or ``"strict"`` validation with tools that
                have no signature.
        """
        given = {
            "llm": llm,
            "run_id": run_id,
            "record": record,
            "usage_limits": usage_limits,
            "history": history,
            "session": session,
            "memory": memory,
            "compaction": compaction,
            "summary": summary,
            "agent_options": {
                "context": context,
                "llm_opts": llm_opts,
                "context_signature": context_signature,
                "debug": debug,
                "trace": trace,
                "signature_validation": signature_validation,
                **({} if mission_limits is None else {"mission_limits": mission_limits}),
                **({} if stream is None else {"stream": stream}),
            },
        }
        return await execute(self, given, runtime=runtime)  # packed as RunOptions there

    async def resume(
        self,
        step: Step | PausedRun,
        decisions: Mapping[str, Decision] | None = None,
        *,
        llm: Any = None,
        context: Any = None,
        llm_opts: Mapping[str, Any] | None = None,
        context_signature: str | None = None,
        debug: bool = False,
        trace: bool | str = True,
        signature_validation: str = "enabled",
        runtime: Runtime | None = None,
        record: bool = False,
        mission_limits: MissionLimits | Mapping[str, Any] | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> Step:
        """Continue a paused run of this agent with decisions on its waiting calls; return
        its next Step (:meth:`Runtime.resume <ptcflow.runtime.Runtime.resume>` with
        ``agent=self``). Blocks.

        The run's context is read back from its journal: leave ``context`` out (given, it
        must be the context the run started with). Pass the options that shape the agent
        (``llm_opts``, ``context_signature``, ``signature_validation``, ``debug``,
        ``trace``) as the run had them, and ``llm`` when the run was given one.

        Args:
            step: the paused Step (``step.paused``), or its ``paused_run``; after a round
                trip through ``msgspec.json`` too.
            decisions: ``{call_id: ptcflow.Approve() | ptcflow.Deny(reason) |
                ptcflow.Supply(value)}`` for calls of ``step.pending`` (calls of agents
                used as tools included: their ids are ``{call id}/{child's call id}``).
            llm, context, llm_opts, context_signature, debug, trace,
                signature_validation, runtime, record, mission_limits, usage_limits: as
                :meth:`run` takes them.

        Returns:
            The next Step: the run's end, or its next pause.

        Raises:
            ResumeError: the subclass saying what does not fit (see ``Runtime.resume``).
            UsageError: no LLM anywhere.
        """
        given = {
            "llm": llm,
            "record": record,
            "usage_limits": usage_limits,
            "agent_options": {
                "context": context,
                "llm_opts": llm_opts,
                "context_signature": context_signature,
                "debug": debug,
                "trace": trace,
                "signature_validation": signature_validation,
                **({} if mission_limits is None else {"mission_limits": mission_limits}),
            },
        }
        return await execute(self, given, runtime=runtime, resume=(step, decisions or {}))

    def resume_sync(
        self,
        step: Step | PausedRun,
        decisions: Mapping[str, Decision] | None = None,
        *,
        backend: str = "asyncio",
        **options: Any,
    ) -> Step:
        """:meth:`resume` from synchronous code (starts an event loop; same options).

        Raises:
            UsageError: called inside a running event loop (``await agent.resume(...)``).
        """
        if in_event_loop():
            raise UsageError(
                "resume_sync() was called inside a running event loop; use "
                "`await agent.resume(...)`"
            )
        call = functools.partial(self.resume, step, decisions, **options)
        resumed: Step = anyio.run(call, backend=backend)
        return resumed

    plan_run = plan
    """The :class:`~ptcflow.runtime.Plannable` hook (``rt.run(agent, ...)`` calls it): see
    :func:`ptcflow.agent._plan.plan`."""

    def run_stream(
        self,
        *,
        llm: Any = None,
        context: Any = None,
        runtime: Runtime | None = None,
        buffer: int = 10_000,
        **options: Any,
    ) -> contextlib.AbstractAsyncContextManager[EventStream]:
        """Run the agent streamed: an async context manager giving its events as they
        happen (an :class:`~ptcflow.runtime.EventStream` of
        :class:`~ptcflow.runtime.StreamEvent`).

        The program text arrives chunk by chunk as the model writes it (``text``), then
        whole (``message``: only a whole response is ever run); each tool call of the
        program as it starts and ends, each print as it is printed, each program's value,
        and at last the run's value (``run_ended``). Agents the program calls stream too,
        their events carrying their ``path``. Iteration ends with the run; ``events.step``
        is then its Step. Leaving the block early cancels the run.

        Args:
            llm: the model (as :meth:`run`).
            context: the context (as :meth:`run`).
            runtime: an open Runtime whose bus is a :class:`~ptcflow.signals.SignalBus`;
                default: one of its own, opened for the run.
            buffer: signals the reader may fall behind before it gets
                :class:`~ptcflow.signals.SignalOverflowError` (the run never waits).
            options: :meth:`run`'s other options (``llm_opts``, ``trace``, ``run_id``,
                ``mission_limits``, ``usage_limits``, ``history``, ...).

        Example:
            >>> # async with agent.run_stream(llm=llm, context={"x": 1}) as events:
            >>> #     async for event in events:
            >>> #         print(event.kind, event.path, event.text)
            >>> # events.step.value
        """
        if options.get("session") is not None:
            raise UsageError(
                f"SubAgent({self.name!r}).run_stream() does not take a session; "
                "use run(session=...)"
            )
        options.setdefault("stream", True)
        given = RunOptions.split({"llm": llm, "context": context, **options})
        return stream_run(self, given, runtime=runtime, buffer=buffer)

    def run_sync(self, *, backend: str = "asyncio", **options: Any) -> Step:
        """:meth:`run` from synchronous code (starts an event loop; takes the same options).

        Raises:
            UsageError: called inside a running event loop (``await agent.run(...)``).
        """
        if in_event_loop():
            raise UsageError(
                "run_sync() was called inside a running event loop; use `await agent.run(...)`"
            )
        step: Step = anyio.run(functools.partial(self.run, **options), backend=backend)
        return step

    async def run_or_raise(self, **options: Any) -> Step:
        """:meth:`run`, raising :class:`SubAgentError` when the run fails (the spec's ``run!``).

        Raises:
            SubAgentError: the run failed; ``.step`` holds the failed Step.
        """
        step = await self.run(**options)
        if not step.ok:
            raise SubAgentError(step)
        return step

    async def then(self, step: Step, **options: Any) -> Step:
        """Run this agent on ``step``'s result (the spec's ``then!``): ``context=step``.

        Raises:
            SubAgentError: this run failed.
            UsageError: ``step`` failed or its value is not a map.
        """
        return await self.run_or_raise(context=step, **options)

    async def compile(
        self,
        *,
        llm: Any = None,
        sample: Any = None,
        llm_opts: Mapping[str, Any] | None = None,
        runtime: Runtime | None = None,
        run_id: str | None = None,
    ) -> CompiledAgent:
        """Ask the model once to write this agent's logic as a PTC-Lisp function (the
        spec's ``compile``, DD-8). Blocks for the one model call and the sample runs.

        Args:
            llm: the model (``SubAgent(llm=...)`` wins), as for :meth:`run`.
            sample: sample inputs: one input map (``{"report": {...}}``) or a list of
                them; the model sees up to 3 and the function must succeed on every one.
                Required when the signature has parameters.
            llm_opts: provider options of the call (``{"temperature": 0}``).
            runtime: an open Runtime to make the call on (default: a temporary one).
            run_id: the compile run's id.

        Returns:
            A :class:`CompiledAgent` (``source``, ``signature``, ``execute``,
            ``metadata``) that runs without a model.

        Raises:
            UsageError: the agent has no signature, a tool that calls a model (named in
                the message), no LLM anywhere, or a sample that does not match the
                signature.
            CompileError: the answer is not a usable function (``.step.fail.reason``
                says why: ``no_code``, ``several_blocks``, ``no_function``,
                ``sample_failed``, ...), or the model call failed (``llm_error``).

        Example:
            >>> # compiled = await scorer.compile(llm=llm, sample=[{"report": r} for r in rs])
            >>> # compiled.execute_sync({"report": report}).value
        """
        return await compile_agent(
            self, llm=llm, sample=sample, llm_opts=llm_opts, runtime=runtime, run_id=run_id
        )

    def compile_sync(self, *, backend: str = "asyncio", **options: Any) -> CompiledAgent:
        """:meth:`compile` from synchronous code (starts an event loop; same options).

        Raises:
            UsageError: called inside a running event loop (``await agent.compile(...)``).
        """
        if in_event_loop():
            raise UsageError(
                "compile_sync() was called inside a running event loop; use "
                "`await agent.compile(...)`"
            )
        compiled: CompiledAgent = anyio.run(
            functools.partial(self.compile, **options), backend=backend
        )
        return compiled

    def as_tool(
        self, *, llm: Any = None, name: str | None = None, description: str | None = None
    ) -> Tool:
        """This agent as a tool other agents call (PTC programs and native tool calls alike).

        A call runs the agent as a child run of the caller on the same Runtime: its run id
        is ``{caller run id}/{call id}`` and its ``parent_run_id`` the caller's, it is
        cancelled with the call, its spans nest under the call's ``execute_tool`` span,
        its signals go to the same bus, and it gets the caller's remaining time (or its
        own ``mission_timeout`` when shorter). The arguments are checked against this
        agent's input signature (they become its context); the answer is its returned
        value (firewalled ``_`` fields reach the caller's program, never the caller's
        model); a failed run is a tool error carrying its fail reason and message. Its
        Step, with its trace, is on the caller's trace (``ToolCallTrace.child``).

        Args:
            llm: the model bound to the tool: used when the agent has none of its own
                (``SubAgent(llm=...)`` wins), over the caller's (the spec's order: the
                agent's, the bound one, the caller's, the run's).
            name: the tool's name (default: the agent's ``name``).
            description: what the tool does (default: the agent's ``description``).

        Returns:
            A :class:`~ptcflow.tools.Tool` with ``calls_model=True``.

        Raises:
            UsageError: an invalid tool name or ``llm``.

        Example:
            >>> finder = SubAgent(prompt="Find {{item}}", signature="(item :string) -> {id :int}",
            ...                   name="finder")
            >>> finder.as_tool(llm="haiku")
            Tool(name='finder', signature='(item :string) -> {id :int}')
        """
        return agent_tool(self, llm=llm, name=name, description=description)

    # -- the definition ---------------------------------------------------------------

    @property
    def judgment(self) -> bool:
        """True in judgment mode: no tools and one turn (the program's value answers)."""
        return not self.tools and self.max_turns == 1

    @property
    def parsed_signature(self) -> Signature | None:
        """The parsed :attr:`signature` (``None`` when there is none), parsed once when
        the agent is defined."""
        return self._signature

    def _static_prompt(self, sig: Signature | None) -> tuple[str, str]:
        tools = [_info(t, example=True) for t in self.tools.values()]
        catalog = [_info(t, example=False) for t in self.tool_catalog.values()]
        return static_prompt(
            tools=tools,
            catalog=catalog,
            signature=sig,
            max_turns=self.max_turns,
            judgment=self.judgment,
            output_notes=self._output_notes(),
        )

    def _output_notes(self) -> list[str]:
        if self.output_type is None:
            return []
        return format_notes(schema_from_hint(self.output_type))

    def __repr__(self) -> str:
        parts = [
            f"name={self.name!r}",
            f"prompt={self.prompt!r}",
            f"signature={self.signature!r}",
            f"tools={list(self.tools)}",
            f"max_turns={self.max_turns}",
        ]
        if self.tool_catalog:
            parts.append(f"tool_catalog={list(self.tool_catalog)}")
        if self.output != "ptc":
            parts.append(f"output={self.output!r}")
        if self.output_type is not None:
            parts.append(
                f"output_type={getattr(self.output_type, '__qualname__', self.output_type)}"
            )
        if self.llm is not None:
            parts.append(f"llm={_llm_text(self.llm)!r}")
        if self.mission_timeout is not None:
            parts.append(f"mission_timeout={self.mission_timeout}")
        return f"SubAgent({', '.join(parts)})"

    def describe(self) -> dict[str, Any]:
        """The definition as plain JSON data (tools by name, the LLM as text).

        Example:
            >>> SubAgent(prompt="Hi {{who}}", signature="(who :string) -> :string").describe()["tools"]
            []
        """
        limit: PromptLimit = self.prompt_limit
        retry: LLMRetry = self.llm_retry
        return {
            "name": self.name,
            "description": self.description,
            "prompt": self.prompt,
            "signature": self.signature,
            "tools": list(self.tools),
            "tool_catalog": list(self.tool_catalog),
            "max_turns": self.max_turns,
            "mode": "judgment" if self.judgment else "agent",
            "output": self.output,
            "prompt_limit": {f: getattr(limit, f) for f in limit.__struct_fields__},
            "mission_timeout": self.mission_timeout,
            "llm_retry": {
                "max_attempts": retry.max_attempts,
                "backoff": retry.backoff,
                "base_ms": retry.base_ms,
                "retryable_errors": list(retry.retryable_errors)
                if retry.retryable_errors is not None
                else None,
            },
            "llm": None if self.llm is None else _llm_text(self.llm),
            "memory_limit": self.memory_limit,
            "program_limits": dict(self.program_limits),
            "output_type": self._type_path,
            "stream": self.stream,
        }

    def strategy(
        self,
        *,
        context_signature: str | None = None,
        llm_opts: Mapping[str, Any] | None = None,
        signature_validation: str = "enabled",
        trace: bool | str = True,
        debug: bool = False,
        model: str | None = None,
        stream: bool | None = None,
    ) -> PTC | JsonAgent:
        """The pure strategy that runs this agent (:class:`PTC`, or :class:`JsonAgent`).

        Use it with :func:`ptcflow.strategies.replay` to rebuild a recorded run's state.
        With the default options it is the one built when the agent was defined (strategies
        are immutable: every run shares it).

        Args:
            context_signature: types of the context's keys, as a signature.
            llm_opts: provider options of every model call.
            signature_validation: ``enabled``, ``warn_only``, ``disabled`` or ``strict``.
            trace: ``True``, ``False`` or ``"on_error"``.
            debug: keep each turn's parsed program, ``ctx/`` and memory in the trace.
            model: the model name or alias sent with every call (``None``: the run's).
            stream: stream the model's text and the programs' output (``None``: the
                definition's :attr:`stream`; a JSON agent does not stream).
        """
        default = self._strategy
        if (
            default is not None
            and context_signature is None
            and not llm_opts
            and signature_validation == "enabled"
            and trace is True
            and debug is False
            and model is None
            and (stream is None or stream is self.stream)
        ):
            return default  # the options' defaults: built when the agent was defined
        retry: LLMRetry = self.llm_retry
        if signature_validation.lstrip(":") == "strict":
            loose = {n: t.untyped for n, t in self.tools.items() if t.untyped}
            if loose:
                listed = "; ".join(f"{n}: {', '.join(what)}" for n, what in loose.items())
                raise UsageError(
                    f"SubAgent({self.name!r}): signature_validation='strict' requires every "
                    f"tool to be fully typed; untyped: {listed}. Annotate the parameters "
                    '(x: int) or give the tool a signature, e.g. tools=[(fn, "(x :int) -> '
                    ':int")]'
                )
        common: dict[str, Any] = {
            "prompt": self.prompt,
            "signature": self.signature,
            "max_turns": self.max_turns,
            "signature_validation": signature_validation.lstrip(":"),
            "model": model,
            "llm_options": dict(llm_opts or {}),
            "llm_max_retries": retry.max_attempts - 1,
            "llm_retry_backoff_ms": retry.base_ms,
            "trace": trace,
            "debug": debug,
            "name": self.name,
            "output_type": self._type_path,
        }
        if self.output == "json":
            return JsonAgent(**common)
        return PTC(
            **common,
            system_prompt=self._system,
            prompt_limit=self.prompt_limit,
            memory_limit_bytes=self.memory_limit,
            context_signature=context_signature,
            program_limits=dict(self.program_limits),
            stream=self.stream if stream is None else stream,
        )


def _check(ok: Any, where: str, problem: str) -> None:
    if not ok:
        raise ConfigError(f"{where}: {problem}")


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _tools(value: Any, where: str, what: str) -> Mapping[str, Tool]:
    if value is None:
        return {}
    try:
        return for_agent(value)
    except UsageError as exc:
        raise UsageError(f"{where}: {what}: {exc}") from None


def _prompt_limit(value: Any, where: str) -> PromptLimit:
    if value is None:
        return PromptLimit()
    if isinstance(value, PromptLimit):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(PromptLimit.__struct_fields__))
        _check(
            not unknown,
            where,
            f"prompt_limit has unknown keys {unknown}; use {list(PromptLimit.__struct_fields__)}",
        )
        return PromptLimit(**value)
    raise ConfigError(f"{where}: prompt_limit must be a PromptLimit or a mapping")


def _info(tool: Tool, *, example: bool) -> ToolInfo:
    return ToolInfo(
        name=tool.name,
        signature=render_tool_signature(tool),
        description=describe_tool(tool),
        example=example_call(tool.name, tool.signature) if example else "",
    )


def _llm_text(llm: Any) -> str:
    if isinstance(llm, str):
        return llm
    name = getattr(llm, "name", None)
    model = getattr(llm, "model", None)
    if isinstance(name, str) and isinstance(model, str) and model:
        return f"{name}:{model}"
    return getattr(llm, "__qualname__", None) or type(llm).__name__
