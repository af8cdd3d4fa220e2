"""Hypothesis strategies for signals and their typed data payloads (JSON-native values)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ptcflow.signals import (
    APPROVAL_REQUESTED,
    APPROVAL_RESOLVED,
    DATA_TYPES,
    EMBED_RESULT,
    HANDOFF,
    LLM_DELTA,
    LLM_RESPONSE,
    PROGRAM_PRINT,
    PROGRAM_RESULT,
    REQUEST_COMPLETED,
    REQUEST_ERROR,
    REQUEST_FAILED,
    REQUEST_PAUSED,
    REQUEST_RESUMED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    ApprovalRequestedData,
    ApprovalResolvedData,
    EmbedResponse,
    EmbedResultData,
    Err,
    ErrorEnvelope,
    HandoffData,
    LLMChunk,
    LLMDeltaData,
    LLMResponse,
    LLMResponseData,
    Ok,
    PendingCall,
    ProgramError,
    ProgramOutput,
    ProgramPrintData,
    ProgramResultData,
    ProgramToolCall,
    RequestEndData,
    RequestErrorData,
    RequestPausedData,
    RequestResumedData,
    RequestStartedData,
    Signal,
    ToolCall,
    ToolCallDelta,
    ToolResultData,
    ToolSpec,
    ToolStartedData,
    Usage,
    UsageData,
    UsageSpent,
)

text = st.text(max_size=12)
floats = st.floats(allow_nan=False, allow_infinity=False)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
counts = st.integers(min_value=0, max_value=10**9)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | ints | floats | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(text, json_values, max_size=4)

usages = st.builds(
    Usage,
    input_tokens=counts,
    output_tokens=counts,
    cache_read_tokens=counts,
    cache_write_tokens=counts,
)
tool_calls = st.builds(ToolCall, id=text, name=text, input=json_objects)
responses = st.builds(
    LLMResponse,
    text=text,
    tool_calls=st.lists(tool_calls, max_size=3).map(tuple),
    usage=usages,
    finish_reason=text,
    model=text,
)
deltas = st.builds(
    ToolCallDelta,
    index=st.integers(0, 5),
    id=st.none() | text,
    name=st.none() | text,
    arguments=text,
)
chunks = st.builds(
    LLMChunk,
    text=text,
    tool_calls=st.lists(deltas, max_size=3).map(tuple),
    usage=st.none() | usages,
    finish_reason=st.none() | text,
    model=st.none() | text,
)
embeds = st.builds(
    EmbedResponse,
    vectors=st.lists(st.lists(floats, max_size=4).map(tuple), max_size=3).map(tuple),
    usage=usages,
    model=text,
)
envelopes = st.builds(
    ErrorEnvelope, type=text, message=text, details=json_objects, retryable=st.booleans()
)
effects = st.lists(json_values, max_size=3).map(tuple)
errs = st.builds(Err, error=envelopes, effects=effects)


def results(payloads: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Ok(payload) or Err envelopes."""
    return st.builds(Ok, payload=payloads, effects=effects) | errs


attempts = st.integers(1, 10)
program_outputs = st.builds(
    ProgramOutput,
    value=json_values,
    returned=st.booleans(),
    failed=st.booleans(),
    fail_value=json_values,
    prints=st.lists(text, max_size=3).map(tuple),
    error=st.none()
    | st.builds(
        ProgramError,
        category=text,
        message=text,
        line=st.none() | counts,
        column=st.none() | counts,
        limit=st.none() | text,
    ),
    tool_calls=st.lists(
        st.builds(
            ProgramToolCall,
            index=counts,
            name=text,
            args=json_objects,
            result=results(json_values),
            duration_ms=floats,
        ),
        max_size=3,
    ).map(tuple),
    memory=st.dictionaries(text, text, max_size=3),
    functions=st.dictionaries(text, text, max_size=3),
    dropped=st.dictionaries(text, text, max_size=2),
    memory_bytes=counts,
    duration_ms=floats,
)
pending_calls = st.builds(
    PendingCall,
    call_id=text,
    tool=text,
    arguments=json_objects,
    kind=st.sampled_from(["approval", "deferred"]),
    reason=text,
    agent=st.lists(text, min_size=1, max_size=3).map(tuple),
    run_id=text,
    expires_at=st.none() | st.just("2026-11-28T10:00:00.000Z"),
)
DATA_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    LLM_DELTA: st.builds(LLMDeltaData, chunk=chunks),
    USAGE: st.builds(UsageData, usage=usages, model=text),
    LLM_RESPONSE: st.builds(LLMResponseData, result=results(responses), attempts=attempts),
    EMBED_RESULT: st.builds(EmbedResultData, result=results(embeds), attempts=attempts),
    TOOL_STARTED: st.builds(ToolStartedData, tool_name=text, arguments=json_objects),
    TOOL_RESULT: st.builds(
        ToolResultData,
        tool_name=text,
        result=results(json_values),
        attempts=attempts,
        duration_ms=floats,
    ),
    REQUEST_STARTED: st.builds(
        RequestStartedData,
        input=json_values,
        agent=text,
        tools=st.lists(
            st.builds(ToolSpec, name=text, description=text, input_schema=json_objects),
            max_size=2,
        ).map(tuple),
    ),
    REQUEST_COMPLETED: st.builds(
        RequestEndData, result=results(json_values), usage=usages, reason=text
    ),
    REQUEST_FAILED: st.builds(RequestEndData, result=errs, usage=usages, reason=text),
    REQUEST_ERROR: st.builds(RequestErrorData, error=envelopes, reason=text),
    PROGRAM_PRINT: st.builds(ProgramPrintData, text=text, index=counts),
    PROGRAM_RESULT: st.builds(
        ProgramResultData, result=results(program_outputs), attempts=attempts, duration_ms=floats
    ),
    APPROVAL_REQUESTED: st.builds(ApprovalRequestedData, pending=pending_calls),
    APPROVAL_RESOLVED: st.builds(
        ApprovalResolvedData,
        tool=text,
        decision=st.sampled_from(["approve", "deny", "supply", "expired"]),
        reason=text,
    ),
    REQUEST_PAUSED: st.builds(
        RequestPausedData,
        pending=st.lists(pending_calls, max_size=3).map(tuple),
        spent=st.none()
        | st.builds(
            UsageSpent,
            requests=counts,
            tool_calls=counts,
            usage=usages,
            cost_usd=floats,
            unpriced=st.dictionaries(text, usages, max_size=2),
        ),
    ),
    REQUEST_RESUMED: st.builds(RequestResumedData, decided=st.lists(text, max_size=3).map(tuple)),
    HANDOFF: st.builds(
        HandoffData,
        from_agent=text,
        to_agent=text,
        tool_name=text,
        messages=counts,
        chain=st.lists(text, max_size=3).map(tuple),
    ),
}
assert set(DATA_STRATEGIES) == set(DATA_TYPES)


@st.composite
def signals(draw: st.DrawFn, type: str | None = None) -> Signal:
    """A signal of a catalogued type (or ``type``) with random correlation fields."""
    kind = type if type is not None else draw(st.sampled_from(sorted(DATA_TYPES)))
    return Signal(
        type=kind,
        source=draw(text),
        id=draw(text),
        time=draw(text),
        data=draw(DATA_STRATEGIES[kind]),
        subject=draw(st.none() | text),
        run_id=draw(text),
        request_id=draw(st.none() | text),
        call_id=draw(st.none() | text),
        iteration=draw(st.integers(0, 1000)),
        seq=draw(st.integers(0, 10**6)),
        parent_run_id=draw(st.none() | text),
        causation_id=draw(st.none() | text),
        traceparent=draw(st.none() | text),
    )
