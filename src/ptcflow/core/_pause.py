"""A run that waits for a person: decisions, the paused run as data, and its rebuild.

A run *pauses* when every directive still open waits for a decision (a tool that requires
approval, a deferred tool). Nothing is held while it waits: the run ends with a
:class:`~ptcflow.core.Step` whose ``paused`` is true, whose ``pending`` lists the calls,
and whose ``paused_run`` (:class:`PausedRun`) is the run's journal so far. A run's state
*is* its journal: :func:`rebuild` folds the journal through the (pure) strategy again and
finds the directives still open, so a paused run resumes in any process, after a restart,
from the Step or from the journal alone. The decisions (:class:`Approve`, :class:`Deny`,
:class:`Supply`) are data too: they travel over HTTP, a Temporal update, a queue.
"""

from __future__ import annotations

import hashlib
import hmac
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from ptcflow.core._protocol import run_info_of
from ptcflow.directives import Directive, RunProgram
from ptcflow.errors import UsageError
from ptcflow.signals import (
    APPROVAL_REQUESTED,
    APPROVAL_RESOLVED,
    LLM_DELTA,
    LLM_RESPONSE,
    REQUEST_PAUSED,
    REQUEST_RESUMED,
    REQUEST_STARTED,
    TERMINAL_TYPES,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    ApprovalRequestedData,
    Err,
    Ok,
    PendingCall,
    ProgramToolCall,
    RequestPausedData,
    RequestResumedData,
    RequestStartedData,
    Signal,
    ToolResultData,
    ToolStartedData,
    Usage,
    decode_signals,
    encode_signal,
)

__all__ = (
    "MAX_JOURNAL_BYTES",
    "PAUSE_VERSION",
    "AlreadyDecidedError",
    "Approve",
    "Decision",
    "Deny",
    "NotPausedError",
    "Parked",
    "PauseInUseError",
    "PauseMismatchError",
    "PausedRun",
    "Rebuilt",
    "ResumeError",
    "Supply",
    "TamperedPauseError",
    "UnknownCallError",
    "WrongDecisionError",
    "journal_lines",
    "journal_of",
    "open_programs",
    "rebuild",
)

PAUSE_VERSION: Final = 1
"""The version of :class:`PausedRun`'s layout; a paused run of another version is refused."""

_NOT_FOLDED: Final = frozenset({REQUEST_PAUSED, REQUEST_RESUMED})
"""Run-level signals the core publishes without folding them into the strategy."""


# -- decisions -------------------------------------------------------------------------------


class Approve(msgspec.Struct, frozen=True, tag="approve"):
    """Run the waiting call as the model asked.

    Example:
        >>> Approve()
        Approve()
    """


class Deny(msgspec.Struct, frozen=True, tag="deny"):
    """Do not run the waiting call: it ends with an ``approval_denied`` tool error carrying
    ``reason``, which the model reads (and may answer differently).

    Example:
        >>> Deny("too large").reason
        'too large'
    """

    reason: str = ""


class Supply(msgspec.Struct, frozen=True, tag="supply"):
    """The result of the waiting call, from outside (a deferred tool's result, or a
    person's answer instead of running the tool): the call ends with ``Ok(value)``.

    Example:
        >>> Supply({"status": "shipped"}).value
        {'status': 'shipped'}
    """

    value: Any = None


Decision = Approve | Deny | Supply
"""A decision on one waiting call (``msgspec.json.decode(raw, type=Decision)`` reads one)."""


# -- errors ------------------------------------------------------------------------------------


class ResumeError(UsageError):
    """A paused run cannot be resumed as asked; the message says why and what to do."""


class NotPausedError(ResumeError):
    """The Step is not paused (the run ended, or this is not a Step of a paused run)."""


class UnknownCallError(ResumeError):
    """A decision names a call that is not waiting in this paused run."""


class AlreadyDecidedError(ResumeError):
    """A decision names a call that was decided already (by an earlier resume)."""


class WrongDecisionError(ResumeError):
    """A decision that does not fit its call (``Approve`` for a deferred tool, which has no
    body to run here), or that is not a decision at all."""


class PauseMismatchError(ResumeError):
    """The paused run belongs to another agent (another strategy, name or tools), is of
    another version, or its journal does not lead where it says."""


class TamperedPauseError(ResumeError):
    """The paused run was changed after it was made (its digest does not match), or is
    unsigned where the Runtime requires a signature."""


class PauseInUseError(ResumeError):
    """This pause is being resumed already, or was resumed already by this Runtime (a
    second resume would perform the approved calls twice)."""


# -- the paused run as data -----------------------------------------------------------------------


class PausedRun(msgspec.Struct, frozen=True, kw_only=True):
    """What a paused run needs to continue: its journal and what it belongs to.

    Attributes:
        version: :data:`PAUSE_VERSION` when it was made.
        run_id: the run's id (the resumed run keeps it).
        agent: the run's agent name.
        strategy: the strategy class (``module.QualName``), checked on resume.
        tools: the names of the run's tools, checked on resume.
        elapsed_ms: time the run was active before it paused (waiting excluded); the
            resumed run's deadline counts on from it.
        paused_at: when it paused (ISO 8601, UTC).
        journal: the run's signals so far (streamed deltas left out): JSON lines, compressed
            with zlib (base64 in JSON); :meth:`signals` reads them back.
        children: the paused child runs of agents used as tools, by the call that runs them.
        digest: ``sha256:...`` of the rest, or ``hmac-sha256:...`` with the Runtime's
            ``pause_key``: a changed paused run is refused.
    """

    version: int
    run_id: str
    agent: str
    strategy: str
    tools: tuple[str, ...] = ()
    elapsed_ms: float = 0.0
    paused_at: str = ""
    journal: bytes = b""
    children: dict[str, PausedRun] = {}
    digest: str = ""

    @classmethod
    def from_journal(
        cls, signals: Iterable[Signal], *, run_id: str | None = None, key: bytes | None = None
    ) -> PausedRun:
        """Rebuild a paused run from its journal alone (``read_journal(path)``, a bus
        recording): the run's signals up to its ``ai.request.paused``, with the paused
        child runs (agents used as tools) whose calls it waits for, from the same journal.

        Args:
            signals: the journal (the run's signals; other runs' are left out).
            run_id: the run (default: the journal's one top-level run).
            key: the Runtime's ``pause_key``, to sign it as the run would have.

        Raises:
            NotPausedError: the run's last signal is not ``ai.request.paused`` (it ended,
                runs still, or the journal was cut in the middle of the pause).
            PauseMismatchError: the journal has no start of the run, or several top-level
                runs and no ``run_id``.
        """
        ordered = list(signals)
        if run_id is None:
            tops = list(
                dict.fromkeys(
                    s.run_id
                    for s in ordered
                    if s.type == REQUEST_STARTED and s.parent_run_id is None
                )
            )
            if len(tops) != 1:
                raise PauseMismatchError(
                    f"the journal holds {len(tops)} top-level runs ({', '.join(tops[:5])}); "
                    "pass run_id=... to say which paused run to rebuild"
                )
            run_id = tops[0]
        by_run: dict[str, list[Signal]] = {}
        for s in ordered:
            by_run.setdefault(s.run_id, []).append(s)
        return _paused_from(by_run, run_id).signed(key)

    def signals(self) -> list[Signal]:
        """The journal decoded back to typed signals.

        Raises:
            TamperedPauseError: a journal line is not a signal.
        """
        try:
            return decode_signals(journal_lines(self.journal, self.run_id))
        except UsageError as exc:
            raise TamperedPauseError(
                f"paused run {self.run_id!r}: its journal is damaged ({exc})"
            ) from None

    def signed(self, key: bytes | None) -> PausedRun:
        """This paused run with its digest set (and its children's), under ``key``."""
        children = {k: c.signed(key) for k, c in self.children.items()}
        unsigned = msgspec.structs.replace(self, children=children, digest="")
        return msgspec.structs.replace(unsigned, digest=_digest(unsigned, key))

    def check(self, key: bytes | None) -> None:
        """Check the digest (and the children's) under ``key``.

        Raises:
            TamperedPauseError: it does not match, or ``key`` is set and it is unsigned.
            PauseMismatchError: another :data:`PAUSE_VERSION`.
        """
        if self.version != PAUSE_VERSION:
            raise PauseMismatchError(
                f"paused run {self.run_id!r} has layout version {self.version}; this ptcflow "
                f"resumes version {PAUSE_VERSION} (resume it with the ptcflow that paused it)"
            )
        unsigned = msgspec.structs.replace(self, digest="")
        if key is not None and not self.digest.startswith("hmac-sha256:"):
            raise TamperedPauseError(
                f"paused run {self.run_id!r} is not signed, and this Runtime has a pause_key: "
                "only paused runs it signed are resumed"
            )
        if not hmac.compare_digest(self.digest, _digest(unsigned, key)):
            raise TamperedPauseError(
                f"paused run {self.run_id!r} was changed after it paused (its digest does not "
                "match): resume the Step exactly as the run returned it"
                + ("" if key is None else ", with the Runtime's pause_key")
            )
        for child in self.children.values():
            child.check(key)


def _paused_from(by_run: Mapping[str, list[Signal]], run_id: str) -> PausedRun:
    """Run ``run_id``'s paused run from the journal's signals by run (unsigned), with its
    paused children: child runs (``{run_id}/{call id}``) whose last signal is
    ``ai.request.paused``."""
    own = sorted(by_run.get(run_id, ()), key=lambda s: s.seq)
    start = next((s for s in own if s.type == REQUEST_STARTED), None)
    if start is None or not isinstance(start.data, RequestStartedData):
        raise PauseMismatchError(
            f"the journal has no ai.request.started of run {run_id!r}: pass its whole journal"
        )
    last = own[-1]
    if last.type != REQUEST_PAUSED or not isinstance(last.data, RequestPausedData):
        raise NotPausedError(
            f"run {run_id!r} is not paused in this journal: its last signal is "
            f"{last.type} (seq {last.seq}); the run ended, still runs, or the journal was "
            "cut before the run paused"
        )
    data = start.data
    unsigned = PausedRun(
        version=PAUSE_VERSION,
        run_id=run_id,
        agent=data.agent,
        strategy=last.data.strategy,
        tools=tuple(sorted(spec.name for spec in data.tools)),
        elapsed_ms=last.data.elapsed_ms,
        paused_at=last.time,
        journal=journal_of(own),
    )
    prefix = f"{run_id}/"
    waits = [p.call_id for p in last.data.pending]
    children = {}
    for child_id, signals in by_run.items():
        if not child_id.startswith(prefix) or signals[0].parent_run_id != run_id:
            continue
        call_id = child_id[len(prefix) :]
        # a child that waits now (an earlier pause's child resumed, or ended since)
        if any(w.startswith(f"{call_id}/") for w in waits):
            children[call_id] = _paused_from(by_run, child_id)
    return msgspec.structs.replace(unsigned, children=children) if children else unsigned


def _digest(unsigned: PausedRun, key: bytes | None) -> str:
    body = msgspec.json.encode(unsigned)
    if key is None:
        return "sha256:" + hashlib.sha256(body).hexdigest()
    return "hmac-sha256:" + hmac.new(key, body, hashlib.sha256).hexdigest()


MAX_JOURNAL_BYTES: Final = 64 * 1024 * 1024
"""The largest journal a paused run may inflate to (a hostile one is refused, not inflated)."""


def journal_of(signals: Iterable[Signal]) -> bytes:
    """A paused run's journal: ``signals`` without the streamed deltas, as JSON lines
    without their empty (``null``) fields, compressed (zlib): signals repeat their ids and
    correlation fields, so a run's journal shrinks about tenfold."""
    lines = b"\n".join(_compact(s) for s in signals if s.type != LLM_DELTA)
    return zlib.compress(lines, 6)


def journal_lines(journal: bytes, run_id: str) -> list[bytes]:
    """The JSON lines of a paused run's journal (bounded: see :data:`MAX_JOURNAL_BYTES`).

    Raises:
        TamperedPauseError: not zlib data, or larger than the bound once inflated.
    """
    if not journal:
        return []
    inflate = zlib.decompressobj()
    try:
        lines = inflate.decompress(journal, MAX_JOURNAL_BYTES)
    except zlib.error as exc:
        raise TamperedPauseError(
            f"paused run {run_id!r}: its journal is not what a run wrote ({exc})"
        ) from None
    if inflate.unconsumed_tail:
        raise TamperedPauseError(
            f"paused run {run_id!r}: its journal inflates past {MAX_JOURNAL_BYTES:,} bytes"
        )
    return lines.split(b"\n")


def _compact(signal: Signal) -> bytes:
    line = msgspec.json.decode(encode_signal(signal))
    return msgspec.json.encode({k: v for k, v in line.items() if v is not None})


class Parked:
    """What a driver reports for work that waits for decisions (instead of a result):
    ``core.park(flight, parked.pending, now)``.

    Attributes:
        pending: the calls it waits for.
        child: the paused child run, for an agent used as a tool (resumed in place).
    """

    __slots__ = ("child", "pending")

    def __init__(self, pending: tuple[PendingCall, ...], child: PausedRun | None = None) -> None:
        self.pending = pending
        self.child = child

    def __repr__(self) -> str:
        return f"Parked({', '.join(p.call_id for p in self.pending)})"


# -- rebuilding a run from its journal --------------------------------------------------------------


class Rebuilt:
    """A paused run folded back from its journal (see :func:`rebuild`).

    Attributes:
        state: the strategy's state.
        open: the directives accepted and not answered, in order.
        pending: the calls that wait for a decision, by call id.
        decided: call ids decided already (``ai.approval.resolved`` in the journal, or
            listed by an ``ai.request.resumed``: a child run's calls, prefixed).
        programs: for each open ``RunProgram``, the tool calls it completed (its record).
        seq, usage, turns, tool_calls: the run's counters.
        started: the ``ai.request.started`` signal.
    """

    __slots__ = (
        "decided",
        "open",
        "pending",
        "programs",
        "seq",
        "started",
        "state",
        "tool_calls",
        "turns",
        "usage",
    )

    def __init__(self) -> None:
        self.state: Any = None
        self.open: dict[str, Directive] = {}
        self.pending: dict[str, PendingCall] = {}
        self.decided: set[str] = set()
        self.programs: dict[str, list[ProgramToolCall]] = {}
        self.seq = 0
        self.usage = Usage()
        self.turns = 0
        self.tool_calls = 0
        self.started: Signal | None = None


def rebuild(strategy: Any, signals: list[Signal], *, run_id: str) -> Rebuilt:
    """Fold run ``run_id``'s journal through ``strategy`` as the run core did, keeping the
    directives it asked for that were not answered.

    Raises:
        PauseMismatchError: the journal has no start of the run, or the strategy does not
            lead to the calls the journal says are waiting (another strategy, or changed).
    """
    own = sorted((s for s in signals if s.run_id == run_id), key=lambda s: s.seq)
    starts = [s for s in own if s.type == REQUEST_STARTED]
    if not starts:
        raise PauseMismatchError(
            f"the journal of paused run {run_id!r} has no ai.request.started: it was cut "
            "before the run began; pass the run's whole journal"
        )
    out = Rebuilt()
    start = out.started = starts[0]
    info = run_info_of(start)
    state, directives = strategy.init(info)
    _accept(out, directives)
    started: dict[str, tuple[str, Any]] = {}
    for signal in own:
        out.seq = max(out.seq, signal.seq)
        if signal is start:
            continue
        kind = signal.type
        call_id = signal.call_id
        if kind == USAGE:
            out.usage = out.usage + signal.data.usage
        elif kind == LLM_RESPONSE:
            out.turns += 1
        elif kind == TOOL_RESULT:
            out.tool_calls += 1
        if kind == APPROVAL_REQUESTED and isinstance(signal.data, ApprovalRequestedData):
            out.pending[signal.data.pending.call_id] = signal.data.pending
        elif kind == APPROVAL_RESOLVED and call_id is not None:
            out.decided.add(call_id)
            out.pending.pop(call_id, None)
        elif kind == REQUEST_RESUMED and isinstance(signal.data, RequestResumedData):
            # the calls an earlier resume decided, its children's too ({call}/{child's
            # call id}): their child runs may have ended since
            out.decided.update(signal.data.decided)
        elif (
            kind == TOOL_STARTED
            and call_id is not None
            and isinstance(signal.data, ToolStartedData)
        ):
            started[call_id] = (signal.data.tool_name, signal.data.arguments)
        if kind in TERMINAL_TYPES and call_id is not None:
            out.pending.pop(call_id, None)
            parent = signal.causation_id
            if call_id in out.open and (parent is None or parent == call_id):
                del out.open[call_id]
            elif parent is not None and parent != call_id and kind == TOOL_RESULT:
                _program_call(out, parent, call_id, started, signal)
        if kind in _NOT_FOLDED:
            continue
        state, directives = strategy.handle(state, signal)
        _accept(out, directives)
    out.state = state
    for program_id in list(out.programs):
        if program_id not in out.open:
            del out.programs[program_id]
    return out


def _accept(out: Rebuilt, directives: Iterable[Any]) -> None:
    for d in directives:
        if isinstance(d, Directive):
            out.open[d.id] = d


def _program_call(
    out: Rebuilt,
    parent: str,
    call_id: str,
    started: Mapping[str, tuple[str, Any]],
    signal: Signal,
) -> None:
    """Record a completed tool call of program ``parent`` (``{parent}/tool/{index}``)."""
    prefix = f"{parent}/tool/"
    if not call_id.startswith(prefix) or not call_id[len(prefix) :].isdigit():
        return
    data = signal.data
    if not isinstance(data, ToolResultData):
        return
    name, args = started.get(call_id, (data.tool_name, {}))
    result: Ok[Any] | Err = data.result
    out.programs.setdefault(parent, []).append(
        ProgramToolCall(
            index=int(call_id[len(prefix) :]),
            name=name,
            args=dict(args) if isinstance(args, Mapping) else {},
            result=result,
        )
    )


def open_programs(rebuilt: Rebuilt) -> dict[str, list[ProgramToolCall]]:
    """The records of the open programs (``RunProgram`` directives still open)."""
    return {
        k: v for k, v in rebuilt.programs.items() if isinstance(rebuilt.open.get(k), RunProgram)
    }
