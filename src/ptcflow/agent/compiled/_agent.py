"""``CompiledAgent``: an agent's logic as a PTC-Lisp function, run without a model.

:func:`ptcflow.agent.compile` asks a model once to write the function; a CompiledAgent
holds it with the signature and the agent's pure tools and runs it on input maps (DD-10),
each run validated against the signature on the way in and out. It can be saved as a
reviewable ``.clj`` file and loaded back (:mod:`ptcflow.agent.compiled._source`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import msgspec

from ptcflow.agent.compiled._run import ChunkRunner
from ptcflow.agent.compiled._source import (
    CompiledFileError,
    check_source,
    digest,
    read_file_text,
    render_file,
)
from ptcflow.errors import ConfigError, UsageError
from ptcflow.lisp import Limits
from ptcflow.runtime import Step
from ptcflow.runtime.lowlevel import in_event_loop
from ptcflow.signals import Err, ErrorEnvelope
from ptcflow.signature import (
    ConversionError,
    Converter,
    Signature,
    SignatureError,
    is_record,
    parse,
    render_type,
    to_plain,
    type_from_hint,
)
from ptcflow.tools import Tool, for_agent

__all__ = ("CompiledAgent", "CompiledMetadata")


class CompiledMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """How a compiled agent was made (the spec's ``CompiledAgent.metadata``).

    Attributes:
        compiled_at: when the model wrote the function (UTC).
        tokens_used: tokens of the compile call (input + output).
        turns: model calls made to compile (1).
        llm_model: the model that wrote it (``"openai:gpt-4.1-mini"``), when known.

    Example:
        >>> from datetime import datetime, timezone
        >>> CompiledMetadata(compiled_at=datetime(2026, 1, 5, tzinfo=timezone.utc)).turns
        1
    """

    compiled_at: datetime
    tokens_used: int = 0
    turns: int = 1
    llm_model: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class CompiledAgent:
    """A compiled agent: a PTC-Lisp function with a signature, run on input maps, no model.

    Build one with :func:`ptcflow.agent.compile` (``await agent.compile(llm=...,
    sample=...)``) or :meth:`load`; the constructor is for programs you wrote or reviewed
    yourself. The program is checked once, here: definitions only (``def``/``defn``),
    the last ``defn`` is the entry function, taking the signature's parameters in order; it
    reads its input from its arguments (not ``ctx/``), keeps no state (no ``memory/``), and
    calls only the given tools.

    Args:
        source: the program text.
        signature: the contract, ``"(report :map) -> {score :float}"``.
        tools: the pure tools the program may call (anything ``SubAgent(tools=...)``
            takes); a tool built with ``calls_model=True`` is refused (DD-8).
        metadata: how it was compiled (default: now, 0 tokens, 1 turn, model unknown).
        name: a name for Steps, tools and files.
        description: what it does (the default description of :meth:`as_tool`).
        program_limits: overrides of :class:`ptcflow.lisp.Limits` for each input's run.
        output_type: a Python type for the value (``SubAgent(output_type=...)`` compiles
            into it): ``step.value`` is an instance; the signature's output must agree.

    Raises:
        UsageError: the program breaks one of the rules above (the message says which
            line and how to fix it), the signature does not parse, or a tool calls a model.

    Example:
        >>> scorer = CompiledAgent(
        ...     source="(defn score [n] {:double (* 2 n)})",
        ...     signature="(n :int) -> {double :int}",
        ... )
        >>> scorer.execute_sync({"n": 21}).value
        {'double': 42}
    """

    source: str
    signature: str
    tools: Any = None
    metadata: CompiledMetadata | None = None
    name: str = "compiled"
    description: str = ""
    program_limits: Any = None
    output_type: Any = None
    _runner: ChunkRunner = dataclasses.field(init=False, repr=False)
    _typed: Converter | None = dataclasses.field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        where = f"CompiledAgent({self.name!r})"
        if not isinstance(self.source, str) or not self.source.strip():
            raise UsageError(f"{where}: source must be the program text, a non-empty string")
        sig = parse(self.signature)
        try:
            tools = dict(for_agent(self.tools)) if self.tools is not None else {}
        except UsageError as exc:
            raise UsageError(f"{where}: tools: {exc}") from None
        for tool in tools.values():
            if tool.calls_model:
                raise UsageError(
                    f"{where}: tool {tool.name!r} calls a model, and a compiled agent runs "
                    "without one (DD-8); compile only agents whose tools are plain functions"
                )
        try:
            limits = Limits(**dict(self.program_limits or {}))
        except TypeError as exc:
            raise ConfigError(f"{where}: program_limits: {exc}") from None
        try:
            entry = check_source(self.source, len(sig.params), tools)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None
        set_ = object.__setattr__
        set_(self, "tools", MappingProxyType(tools))
        set_(self, "program_limits", MappingProxyType(dict(self.program_limits or {})))
        if self.metadata is None:
            set_(self, "metadata", CompiledMetadata(compiled_at=_now()))
        set_(self, "_runner", ChunkRunner(self.source, entry, sig, tools, limits, self.signature))
        if self.output_type is not None:
            try:
                node = type_from_hint(self.output_type)
            except SignatureError as exc:
                raise ConfigError(f"{where}: output_type: {exc.reason}") from None
            if sig.output != node:
                raise ConfigError(
                    f"{where}: the signature's output {render_type(sig.output)} and "
                    f"output_type ({render_type(node)}) disagree"
                )
            set_(self, "_typed", Converter(self.output_type))

    def _typed_step(self, step: Step) -> Step:
        conv = self._typed
        if conv is None or not step.ok:
            return step
        try:
            return msgspec.structs.replace(step, value=conv.load(step.value))
        except ConversionError as exc:
            error = ErrorEnvelope.make(
                "validation",
                f"CompiledAgent({self.name!r}): the value does not fit output_type: {exc}",
                {"where": "output", "errors": [str(exc)]},
                retryable=False,
            )
            return msgspec.structs.replace(step, ok=False, error=error, reason="validation")

    @property
    def parsed_signature(self) -> Signature:
        """The parsed :attr:`signature`."""
        return self._runner.signature

    # -- running ------------------------------------------------------------------------

    async def execute(self, input: Mapping[str, Any], *, run_id: str | None = None) -> Step:
        """Run the function on one input map (DD-10) and return a :class:`Step`. Blocks
        while its tools run; never calls a model.

        A failure is on the Step, never raised: ``step.fail.reason`` is ``invalid_input``
        (the map does not match the signature's parameters), the program's own ``fail``
        reason (``reason == "fail"``), ``program_error`` (an error in the program or a
        tool, with its line), ``invalid_fail`` or ``invalid_return`` (the value does not
        match the signature's output; ``details["value"]`` holds it).

        Args:
            input: the parameters by name, ``{"report": {...}}`` (``{}`` for none).
            run_id: the Step's id (default ``"{name}/execute"``).

        Returns:
            The Step: ``ok``, ``value``, ``fail``, ``tool_calls``, ``duration_ms``,
            ``signature`` (``turns`` is 0: no model was called).
        """
        (step,) = await self._runner.run([_plain(input)], [run_id or f"{self.name}/execute"])
        return self._typed_step(step)

    def execute_sync(
        self, input: Mapping[str, Any], *, run_id: str | None = None, backend: str = "asyncio"
    ) -> Step:
        """:meth:`execute` from synchronous code (starts an event loop).

        Raises:
            UsageError: called inside a running event loop (``await compiled.execute(...)``).
        """
        _no_loop("execute_sync", "execute")
        step: Step = anyio.run(
            functools.partial(self.execute, input, run_id=run_id), backend=backend
        )
        return step

    async def execute_many(
        self, inputs: Iterable[Mapping[str, Any]], *, chunk_size: int = 256
    ) -> list[Step]:
        """Run the function on many input maps: one Step per input, in order. Blocks.

        An input that fails gets a failed Step (as :meth:`execute` gives it) and the
        others go on. The inputs run in chunks of ``chunk_size``, each one program (read
        and compiled once), so a chunk costs about one run plus the work per input; a
        chunk in which an input fails runs again in halves, down to single inputs, its
        tool calls answered from the results already in hand: each input gets the Step
        :meth:`execute` gives it. Step ids are ``"{name}/{i}"``; in a chunk each Step's
        ``duration_ms`` is its share of the chunk and ``tool_calls`` is 0.

        Args:
            inputs: the input maps.
            chunk_size: inputs per program (``1``: each alone).

        Returns:
            The Steps, one per input.

        Raises:
            UsageError: ``chunk_size`` is not an integer >= 1.
        """
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise UsageError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
        items = list(inputs)
        steps: list[Step] = []
        for start in range(0, len(items), chunk_size):
            chunk = items[start : start + chunk_size]
            ids = [f"{self.name}/{start + i}" for i in range(len(chunk))]
            steps.extend(await self._runner.run([_plain(i) for i in chunk], ids))
        return [self._typed_step(s) for s in steps]

    def execute_many_sync(
        self,
        inputs: Iterable[Mapping[str, Any]],
        *,
        chunk_size: int = 256,
        backend: str = "asyncio",
    ) -> list[Step]:
        """:meth:`execute_many` from synchronous code (starts an event loop)."""
        _no_loop("execute_many_sync", "execute_many")
        steps: list[Step] = anyio.run(
            functools.partial(self.execute_many, inputs, chunk_size=chunk_size), backend=backend
        )
        return steps

    def as_tool(self, *, name: str | None = None, description: str | None = None) -> Tool:
        """This compiled agent as a tool any agent can call; it needs no model.

        A call validates its arguments against the signature's parameters, runs
        :meth:`execute`, and answers with the value; a failed Step is a tool error carrying
        its message. The tool does not call a model, so an agent using it can be compiled
        too.

        Args:
            name: the tool's name (default: the compiled agent's name).
            description: what it does (default: :attr:`description`).

        Returns:
            A :class:`~ptcflow.tools.Tool`.

        Example:
            >>> double = CompiledAgent(source="(defn f [n] (* 2 n))",
            ...                        signature="(n :int) -> :int", name="double")
            >>> double.as_tool().name
            'double'
        """
        tool_name = name or self.name

        async def run_compiled(arguments: dict[str, Any]) -> Any:
            step = await self.execute(arguments, run_id=f"{tool_name}/call")
            if step.ok:
                return to_plain(step.value)
            return Err(error=step.error or ErrorEnvelope.make("compiled", "the run failed"))

        sig = self.parsed_signature
        return Tool(
            tool_name,
            run_compiled,
            description=self.description if description is None else description,
            signature=sig.with_name(tool_name) if sig.name is None else sig,
            pass_input=True,
        )

    # -- files --------------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the program to ``path`` as a reviewable ``.clj`` file (header + source).

        The header (``;; key: value`` lines) holds the name, description, signature, the
        tools' names, the metadata and the source's sha256; the source follows as written.
        Check it into your repository and review it like code.

        Returns:
            The path written.

        Example:
            >>> # compiled.save("agents/scorer.clj")
        """
        meta = self.metadata or CompiledMetadata(compiled_at=_now())
        header = {
            "name": self.name,
            "description": " ".join(self.description.split()),
            "signature": self.signature,
            "tools": ", ".join(self.tools),
            "compiled_at": meta.compiled_at.isoformat(),
            "llm_model": meta.llm_model or "",
            "tokens_used": str(meta.tokens_used),
            "turns": str(meta.turns),
            "sha256": digest(self.source.strip("\n")),
        }
        target = Path(path)
        target.write_text(render_file(header, self.source.strip("\n")), encoding="utf-8")
        return target

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        tools: Any = None,
        agent: Any = None,
        program_limits: Any = None,
    ) -> CompiledAgent:
        """Load a compiled agent saved by :meth:`save`, checking it again.

        Args:
            path: the ``.clj`` file.
            tools: the tools it may call (default: ``agent``'s tools); every tool named
                in its header must be among them.
            agent: the :class:`~ptcflow.SubAgent` it was compiled from: its signature must
                be the file's, and its name, tools, program limits and output_type are the
                defaults.
            program_limits: overrides of :class:`ptcflow.lisp.Limits` per input.

        Returns:
            The CompiledAgent.

        Raises:
            CompiledFileError: the file is not a saved compiled agent, its source changed
                after it was saved (the sha256 differs), its signature is not the agent's,
                a tool it names is missing, or its program breaks a rule.
        """
        where = str(path)
        header, source = read_file_text(Path(path).read_text(encoding="utf-8"), where)
        sig_text = header.get("signature")
        if not sig_text:
            raise CompiledFileError(f"{where}: no ';; signature:' line in the header")
        expected = header.get("sha256")
        if expected and expected != digest(source):
            raise CompiledFileError(
                f"{where}: the source was changed after it was saved (its sha256 is not the "
                "header's). If the change is intended and reviewed, delete the ';; sha256:' "
                "line (or save the CompiledAgent again); otherwise restore the file"
            )
        try:
            mine = parse(sig_text)
        except UsageError as exc:
            raise CompiledFileError(f"{where}: the ';; signature:' line: {exc}") from None
        if agent is not None and agent.signature is not None and parse(agent.signature) != mine:
            raise CompiledFileError(
                f"{where}: compiled for the signature {sig_text}, but the agent "
                f"{agent.name!r} has {agent.signature}; compile the agent again"
            )
        if tools is None and agent is not None:
            tools = agent.tools
        given = dict(for_agent(tools)) if tools is not None else {}
        for needed in filter(None, (t.strip() for t in header.get("tools", "").split(","))):
            if needed not in given:
                known = ", ".join(sorted(given)) or "none"
                raise CompiledFileError(
                    f"{where}: the program uses the tool {needed!r}, which was not given "
                    f"(given: {known}); pass it with tools=[...] or agent=..."
                )
        try:
            return cls(
                source=source,
                signature=sig_text,
                tools=given,
                metadata=_metadata(header, where),
                name=header.get("name") or (agent.name if agent is not None else "compiled"),
                description=header.get("description", ""),
                program_limits=program_limits
                if program_limits is not None
                else (agent.program_limits if agent is not None else None),
                output_type=getattr(agent, "output_type", None),
            )
        except UsageError as exc:
            raise CompiledFileError(f"{where}: {exc}") from None

    def __repr__(self) -> str:
        return (
            f"CompiledAgent(name={self.name!r}, signature={self.signature!r}, "
            f"tools={list(self.tools)}, source={len(self.source)} chars)"
        )


def _metadata(header: Mapping[str, str], where: str) -> CompiledMetadata:
    try:
        return CompiledMetadata(
            compiled_at=datetime.fromisoformat(header["compiled_at"])
            if header.get("compiled_at")
            else _now(),
            tokens_used=int(header.get("tokens_used") or 0),
            turns=int(header.get("turns") or 1),
            llm_model=header.get("llm_model") or None,
        )
    except ValueError as exc:
        raise CompiledFileError(
            f"{where}: a metadata line of the header is malformed: {exc}"
        ) from None


def _now() -> datetime:
    return datetime.now(UTC)


def _no_loop(name: str, instead: str) -> None:
    if in_event_loop():
        raise UsageError(
            f"{name}() was called inside a running event loop; use `await compiled.{instead}(...)`"
        )


def _plain(input: Any) -> Any:
    """An input given as a typed record (a dataclass, a Struct, a pydantic model) as its
    plain map."""
    if is_record(input):
        return to_plain(input)
    if isinstance(input, Mapping) and any(is_record(v) for v in input.values()):
        return to_plain(input)
    return input
