"""Compiling a SubAgent (DD-8): one model call writes a PTC-Lisp function for its signature.

The model sees the task, the signature, a few sample inputs, the agent's tools and the
language, and answers with one ```clojure block of definitions whose last ``defn`` is the
function. The call goes through a :class:`~ptcflow.runtime.Runtime` as a one-turn
:class:`~ptcflow.strategies.ReAct` run without tools, so it has the agent's retries,
deadline, spans and signals. The answer is then checked (one block, definitions only, a
function, known tools) and run on every sample; any problem is a :class:`CompileError`
naming what was wrong and how to fix it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ptcflow.agent._model import LLMRetry
from ptcflow.agent._plan import SubAgentError, _registry, source_for
from ptcflow.agent.compiled._agent import CompiledAgent, CompiledMetadata
from ptcflow.agent.compiled._source import SourceProblem, check_source
from ptcflow.errors import RunError, UsageError
from ptcflow.lisp import LispError, extract_code, from_python, pr_str
from ptcflow.runtime import UNSET, Runtime, Step
from ptcflow.signals import ErrorEnvelope
from ptcflow.signature import Signature, is_record, parse, render_type, to_plain
from ptcflow.strategies import ReAct, StepFail
from ptcflow.strategies.ptc import example_value
from ptcflow.tools import describe_tool, render_tool_signature

if TYPE_CHECKING:
    from ptcflow.agent._subagent import SubAgent

__all__ = ("CompileError", "compile_agent")

_SAMPLES_SHOWN: Final = 3
_SAMPLE_CHARS: Final = 600

_SYSTEM = """\
You write one PTC-Lisp function, in a small Clojure subset that runs in a sandbox. It is \
written once and then runs on many inputs without you, so write general logic, not \
answers for the samples.

## Rules
- Answer with exactly one ```clojure block holding only definitions: (defn ...) and \
(def ...). Nothing else at the top level: no calls, no examples.
- The last (defn ...) is the function. It takes {arity}, in this order: {params}.
- Its value is the result and must match: {output}
- Read the input from the arguments (ctx/ is empty). Keep no state: no memory/, no def \
inside a function (use let).
- When an input cannot be handled, call (fail {{:reason :keyword :message "why"}}): that \
input fails and the others go on.
- Call tools with one map of named arguments: (call "tool-name" {{:arg value}}).

{tools}

## PTC-Lisp
{language}

## Output format
Exactly one block, for example:
```clojure
{example}
```"""

_USER = """\
Write the function for this task (its placeholders name the function's arguments):
{task}

Signature: {signature}

Sample inputs ({shown} of {total}):
{samples}"""


class CompileError(SubAgentError):
    """Compiling a SubAgent failed: the model's answer could not become a function.

    Attributes:
        step: the compile run's Step, failed: ``step.fail.reason`` is ``llm_error`` (the
            model call failed), ``no_code`` (no ```clojure block), ``several_blocks``,
            ``unreadable`` (it does not parse), ``not_definitions`` (something other than
            ``def``/``defn`` at the top level), ``no_function`` (no ``defn``),
            ``stateful`` (``memory/``, or a ``def`` inside a function),
            ``invalid_program`` (an unknown tool, ``ctx/``, an unbound name) or
            ``sample_failed`` (the function failed on a sample); ``step.fail.message``
            says what and how to fix it.
        source: the program taken from the answer (``None`` when there was none).
        response: the model's answer (``None`` when the call failed).

    Example:
        >>> err = CompileError(Step(run_id="c1", ok=False, fail=StepFail(
        ...     reason="no_function", message="the answer defines no function")), "scorer")
        >>> str(err)
        "compiling SubAgent 'scorer' failed (no_function): the answer defines no function"
    """

    def __init__(
        self, step: Step, agent: str, source: str | None = None, response: str | None = None
    ) -> None:
        fail = step.fail
        why = f"{fail.reason}): {fail.message}" if fail is not None else "failed)"
        RunError.__init__(self, f"compiling SubAgent {agent!r} failed ({why}", step.error)
        self.step = step
        self.source = source
        self.response = response


async def compile_agent(
    agent: SubAgent,
    *,
    llm: Any = None,
    sample: Any = None,
    llm_opts: Mapping[str, Any] | None = None,
    runtime: Runtime | None = None,
    run_id: str | None = None,
) -> CompiledAgent:
    """Ask the model once for ``agent``'s logic as a function (see :meth:`SubAgent.compile`)."""
    sig = _compilable(agent)
    samples = _samples(agent, sig, sample)
    chosen = agent.llm if agent.llm is not None else llm
    if chosen is None and (runtime is None or runtime.llm is None):
        raise UsageError(
            f"SubAgent({agent.name!r}) has no LLM to compile with: pass llm= (a provider, a "
            "model name or alias, or a function) or set SubAgent(llm=...)"
        )
    retry: LLMRetry = agent.llm_retry
    strategy = ReAct(
        system_prompt=_system_prompt(agent, sig),
        max_iterations=1,
        model=chosen if isinstance(chosen, str) else None,
        llm_max_retries=retry.max_attempts - 1,
        llm_retry_backoff_ms=retry.base_ms,
        llm_options=dict(llm_opts or {}),
        name=f"compile {agent.name}",
    )
    user = _user_prompt(agent, sig, samples)
    timeout = UNSET if agent.mission_timeout is None else agent.mission_timeout / 1000.0
    options: dict[str, Any] = {"tools": [], "run_id": run_id, "name": agent.name}
    if runtime is not None:
        model = source_for(agent, chosen, {}, llm_opts)
        step = await runtime.run(strategy, user, llm=model, timeout=timeout, **options)
    else:
        async with _registry(chosen) as registry, Runtime(llm=registry) as rt:
            model = source_for(agent, chosen, {}, llm_opts)
            step = await rt.run(strategy, user, llm=model, timeout=timeout, **options)
    if not step.ok:
        err = step.error
        message = f"the model call failed: {err.message if err is not None else step.reason}"
        raise CompileError(_failed(step, "llm_error", message), agent.name)
    response = str(step.value)
    source = _program(step, agent.name, response)
    try:
        check_source(source, len(sig.params), agent.tools)
    except SourceProblem as exc:
        failed = _failed(step, exc.reason, str(exc))
        raise CompileError(failed, agent.name, source, response) from None
    compiled = CompiledAgent(
        source=source,
        signature=agent.signature or "",
        tools=agent.tools,
        metadata=CompiledMetadata(
            compiled_at=datetime.now(UTC),
            tokens_used=step.usage.total_tokens,
            turns=max(step.turns, 1),
            llm_model=_model_name(chosen if chosen is not None else getattr(runtime, "llm", None)),
        ),
        name=agent.name,
        description=agent.description,
        program_limits=agent.program_limits,
        output_type=agent.output_type,
    )
    results = await compiled.execute_many(samples, chunk_size=1)
    for i, result in enumerate(results):
        if not result.ok and result.fail is not None:
            message = (
                f"the function failed on sample {i} ({result.fail.reason}: "
                f"{result.fail.message}); check the sample, or compile again"
            )
            failed = _failed(step, "sample_failed", message, {"sample": i, "step": result.fail})
            raise CompileError(failed, agent.name, source, response)
    return compiled


def _compilable(agent: SubAgent) -> Signature:
    """The agent's signature, once the agent is known to be compilable (DD-8)."""
    if agent.signature is None:
        raise UsageError(
            f"SubAgent({agent.name!r}) has no signature: compile writes a function for it, "
            'so give one, e.g. signature="(report :map) -> {score :float}"'
        )
    model_tools = [name for name, tool in agent.tools.items() if tool.calls_model]
    if model_tools:
        names = ", ".join(repr(n) for n in model_tools)
        raise UsageError(
            f"SubAgent({agent.name!r}) cannot be compiled: its tool {names} calls a model, "
            "and a compiled agent runs without one (DD-8). Remove it, or run the agent "
            "instead of compiling it"
        )
    return parse(agent.signature)


def _samples(agent: SubAgent, sig: Signature, sample: Any) -> list[Mapping[str, Any]]:
    """The sample inputs as a list of maps, each valid for the signature."""
    where = f"SubAgent({agent.name!r}).compile"
    if sample is None:
        if sig.params:
            names = ", ".join(f'"{p.name}": ...' for p in sig.params)
            raise UsageError(
                f"{where} needs sample=: one input map ({{{names}}}) or a list of them, so "
                "the model sees the data's shape and the function is checked on it"
            )
        return [{}]
    if is_record(sample):
        sample = to_plain(sample)
    items = [sample] if isinstance(sample, Mapping) else sample
    if not isinstance(items, Sequence) or isinstance(items, str) or not items:
        raise UsageError(
            f"{where}: sample= must be an input map or a non-empty list of them (or, for a "
            "one-parameter signature, a list of values of that parameter)"
        )
    out: list[Mapping[str, Any]] = []
    for i, item in enumerate(items):
        item = to_plain(item) if is_record(item) else item
        checked = sig.validate_input(item) if _is_input(sig, item) else None
        if checked is None and len(sig.params) == 1:
            # The spec's form: sample=sample_reports for (report :map), a list of values.
            wrapped = {sig.params[0].name: item}
            alt = sig.validate_input(wrapped)
            if alt.ok:
                item, checked = wrapped, alt
        if checked is None or not checked.ok:
            problem = "; ".join(checked.errors) if checked else f"a {type(item).__name__}"
            raise UsageError(f"{where}: sample {i} is not an input of {agent.signature}: {problem}")
        out.append(item)
    return out


def _is_input(sig: Signature, item: Any) -> bool:
    """Whether ``item`` is written as an input map (keys naming parameters), not as the
    value of a one-parameter signature's parameter."""
    if not isinstance(item, Mapping):
        return False
    if len(sig.params) != 1:
        return True
    return sig.params[0].name in item


def _system_prompt(agent: SubAgent, sig: Signature) -> str:
    head = agent._static_prompt(sig)[0]  # the language reference the agent's runs show
    language = head.split("## PTC-Lisp\n", 1)[-1]
    params = ", ".join(f"{p.name} {render_type(p.type, 'full')}" for p in sig.params) or "none"
    n = len(sig.params)
    tools = ["## Tools you can call"]
    for tool in agent.tools.values():
        tools.append(f"- {render_tool_signature(tool)}")
        tools.extend(f"  {line}" for line in describe_tool(tool).splitlines() if line.strip())
    if len(tools) == 1:
        tools.append("- none: compute the result from the arguments.")
    args = " ".join(p.name.replace("_", "-") for p in sig.params)
    name = "".join(c if c.isalnum() else "-" for c in agent.name.lower()).strip("-") or "run"
    return _SYSTEM.format(
        arity="no arguments" if n == 0 else f"{n} argument{'s' if n > 1 else ''}",
        params=params,
        output=render_type(sig.output, "full"),
        tools="\n".join(tools),
        language=language,
        example=f"(defn {name} [{args}]\n  {example_value(sig.output)})",
    )


def _user_prompt(agent: SubAgent, sig: Signature, samples: Sequence[Mapping[str, Any]]) -> str:
    shown = samples[:_SAMPLES_SHOWN]
    lines = []
    for item in shown:
        data = msgspec.to_builtins(dict(item), str_keys=True)
        lines.append("- " + pr_str(from_python(data), limit=_SAMPLE_CHARS))
    return _USER.format(
        task=agent.prompt,
        signature=agent.signature,
        shown=len(shown),
        total=len(samples),
        samples="\n".join(lines),
    )


def _program(step: Step, agent: str, response: str) -> str:
    """The one program of the answer, or the CompileError saying why there is none."""
    try:
        return extract_code(response)
    except LispError as err:
        reason = "several_blocks" if "code blocks" in err.message else "no_code"
        message = (
            f"{err.message}. Compile expects one ```clojure block of definitions; the "
            "answer is on CompileError.response: compile again, or write the function yourself "
            "with CompiledAgent(source=...)"
        )
        raise CompileError(_failed(step, reason, message), agent, None, response) from None


def _failed(
    step: Step, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> Step:
    """The compile run's Step, failed for ``reason``."""
    plain = msgspec.to_builtins(dict(details or {}))
    return msgspec.structs.replace(
        step,
        ok=False,
        reason=reason,
        fail=StepFail(reason=reason, message=message, details=plain),
        error=ErrorEnvelope.make("compile", message, {"reason": reason}),
    )


def _model_name(llm: Any) -> str | None:
    if llm is None:
        return None
    if isinstance(llm, str):
        return llm
    name, model = getattr(llm, "name", None), getattr(llm, "model", None)
    if isinstance(name, str) and isinstance(model, str) and model:
        return f"{name}:{model}"
    return getattr(llm, "__qualname__", None) or type(llm).__name__
