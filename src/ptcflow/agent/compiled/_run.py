"""Running a compiled program on inputs: one :class:`Step` per input, never an exception.

Each input is checked against the signature's parameters, then the entry function runs on
it in the sandbox with the agent's tools (called through :func:`ptcflow.tools.call_tool`:
arguments validated, sync tools in worker threads), and its value is checked against the
signature's output. No model is ever called.

Many inputs run in **chunks**: one program maps the entry function over the chunk, so the
program is read, analyzed and compiled once per chunk instead of once per input (the lisp
package's public API compiles a program per ``run``). The chunk's limits are the
per-input limits times its size, its deadline the per-input one. When a chunk does not end
with one value per input (an input failed, called ``fail`` or ``return``, or the chunk went
past a limit), its two halves run again, down to a few inputs that run alone under the
exact per-input limits; the tool calls already made are answered from their results (the
tools are pure, DD-8). So every input gets the Step it gets alone, one failing input in a
chunk of 256 costs about 16 extra runs, and no tool call is repeated.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from ptcflow.errors import UsageError
from ptcflow.lisp import Limits, LispError, LispResult, run
from ptcflow.program import plain_value
from ptcflow.runtime import Step
from ptcflow.signals import Err, ErrorEnvelope, Ok
from ptcflow.signature import Signature
from ptcflow.strategies import StepFail
from ptcflow.strategies.ptc import check_fail
from ptcflow.tools import Tool, call_tool

__all__ = ("ChunkRunner",)

_SCALED: Final = ("max_steps", "max_tool_calls", "max_output_chars", "max_memory_bytes")
"""The limits a chunk gets once per input (the deadline stays one input's)."""

_ALONE: Final = 4
"""A failed chunk of at most this many inputs runs them one by one (larger ones split)."""

_Cache = dict[tuple[str, bytes], Ok[Any] | Err]


class ChunkRunner:
    """Runs one compiled program (its source and entry function) on inputs.

    Args:
        source: the program (definitions only, checked by ``check_source``).
        entry: the entry function's name.
        signature: the agent's parsed signature.
        tools: the tools the program may call.
        limits: the limits of one input's run.
        signature_text: the signature as written (set on every Step).
    """

    def __init__(
        self,
        source: str,
        entry: str,
        signature: Signature,
        tools: Mapping[str, Tool],
        limits: Limits,
        signature_text: str,
    ) -> None:
        self.program = f"{source}\n(mapv (fn [args] (apply {entry} args)) ctx/batch)"
        self.signature = signature
        self.tools = tools
        self.limits = limits
        self.signature_text = signature_text

    async def run(self, inputs: Sequence[Any], run_ids: Sequence[str]) -> list[Step]:
        """One Step per input, in order (the run ids name them)."""
        steps: list[Step | None] = [None] * len(inputs)
        ready: list[tuple[int, list[Any]]] = []
        for i, value in enumerate(inputs):
            args = self._arguments(value)
            if isinstance(args, StepFail):
                steps[i] = self._failed(run_ids[i], args, 0.0)
            else:
                ready.append((i, args))
        if len(ready) == 1:
            i, args = ready[0]
            steps[i] = await self._alone(run_ids[i], args, None)
        elif ready:
            await self._chunk(ready, run_ids, steps)
        return [s for s in steps if s is not None]

    # -- one input --------------------------------------------------------------------

    def _arguments(self, value: Any) -> list[Any] | StepFail:
        """The entry function's arguments for one input map, or why the input is refused."""
        sig = self.signature
        if not isinstance(value, Mapping):
            names = ", ".join(f'"{p.name}": ...' for p in sig.params)
            return StepFail(
                reason="invalid_input",
                message=f"an input must be a map of the signature's parameters ({{{names}}}), "
                f"got {type(value).__name__}",
            )
        checked = sig.validate_input(value)
        if not checked.ok:
            return StepFail(
                reason="invalid_input",
                message="the input does not match the signature's parameters: "
                + "; ".join(checked.errors),
                details={"errors": list(checked.errors)},
            )
        try:
            return [
                msgspec.to_builtins(checked.value.get(p.name), str_keys=True) for p in sig.params
            ]
        except (TypeError, msgspec.ValidationError) as exc:
            return StepFail(reason="invalid_input", message=f"the input is not plain data: {exc}")

    async def _alone(self, run_id: str, args: list[Any], cache: _Cache | None) -> Step:
        started = time.perf_counter()
        result = await self._run([args], self.limits, run_id, cache)
        ms = (time.perf_counter() - started) * 1000.0
        calls = len(result.tool_calls)
        if result.error is not None:
            err = result.error
            where = f" (line {err.line}, column {err.column})" if err.line is not None else ""
            fail = StepFail(
                reason="program_error",
                message=f"{err.category} error{where}: {err.message}",
                details={"category": err.category, "line": err.line, "column": err.column},
            )
            return self._failed(run_id, fail, ms, calls)
        if result.failed:
            checked = check_fail(plain_value(result.fail_value))
            if isinstance(checked, StepFail):
                return self._failed(run_id, checked, ms, calls, error_type="fail")
            return self._failed(
                run_id, StepFail(reason="invalid_fail", message=checked.message), ms, calls
            )
        value = result.value if result.returned else result.value[0]
        return self._finished(run_id, plain_value(value), ms, calls)

    def _finished(self, run_id: str, value: Any, ms: float, calls: int) -> Step:
        checked = self.signature.validate_output(value)
        if not checked.ok:
            fail = StepFail(
                reason="invalid_return",
                message="the value does not match the signature's output: "
                + "; ".join(checked.errors),
                details={"errors": list(checked.errors), "value": value},
            )
            return self._failed(run_id, fail, ms, calls)
        return Step(
            run_id=run_id,
            ok=True,
            value=value,
            reason="returned",
            tool_calls=calls,
            duration_ms=ms,
            signature=self.signature_text,
        )

    def _failed(
        self,
        run_id: str,
        fail: StepFail,
        ms: float,
        calls: int = 0,
        *,
        error_type: str | None = None,
    ) -> Step:
        kind = error_type or fail.reason
        details = {"reason": fail.reason, "op": fail.op} if kind == "fail" else fail.details
        return Step(
            run_id=run_id,
            ok=False,
            error=ErrorEnvelope.make(kind, fail.message, details),
            reason="fail" if kind == "fail" else fail.reason,
            tool_calls=calls,
            duration_ms=ms,
            fail=fail,
            signature=self.signature_text,
        )

    # -- many inputs ------------------------------------------------------------------

    async def _chunk(
        self,
        ready: list[tuple[int, list[Any]]],
        run_ids: Sequence[str],
        steps: list[Step | None],
        cache: _Cache | None = None,
    ) -> None:
        """Run ``ready`` as one program; when it does not give one value per input, run
        each half again (inputs alone below :data:`_ALONE`), reusing the tool calls made."""
        cache = {} if cache is None else cache
        n = len(ready)
        if n <= _ALONE:
            for i, args in ready:
                steps[i] = await self._alone(run_ids[i], args, cache)
            return
        scaled = msgspec.structs.replace(
            self.limits, **{k: getattr(self.limits, k) * n for k in _SCALED}
        )
        started = time.perf_counter()
        result = await self._run([a for _, a in ready], scaled, run_ids[ready[0][0]], cache)
        ms = (time.perf_counter() - started) * 1000.0 / n
        values = result.value
        if result.ok and not result.returned and isinstance(values, list) and len(values) == n:
            for (i, _), value in zip(ready, values, strict=True):
                steps[i] = self._finished(run_ids[i], plain_value(value), ms, 0)
            return
        half = n // 2
        await self._chunk(ready[:half], run_ids, steps, cache)
        await self._chunk(ready[half:], run_ids, steps, cache)

    async def _run(
        self, batch: list[list[Any]], limits: Limits, run_id: str, cache: _Cache | None
    ) -> LispResult:
        tools = self.tools

        async def route(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
            tool = tools.get(name)
            if tool is None:
                known = ", ".join(sorted(tools)) or "none"
                return Err(
                    error=ErrorEnvelope.make(
                        "unknown_tool", f'unknown tool "{name}"; available tools: {known}'
                    )
                )
            key = (name, msgspec.json.encode(plain_value(args)))
            if cache is not None and key in cache:
                return cache[key]
            answer = await call_tool(tool, f"{run_id}/tool/{index}", args)
            if cache is not None:
                cache[key] = answer
            return answer

        try:
            return await run(
                self.program,
                ctx={"batch": batch},
                tool_names=tools,
                limits=limits,
                call=route,
            )
        except UsageError as exc:  # input data the sandbox refuses (checked before, rare)
            return LispResult(error=LispError("type", str(exc)))
