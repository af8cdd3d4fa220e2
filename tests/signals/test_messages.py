"""Messages, usage arithmetic and the StreamAssembler."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.signals import (
    LLMChunk,
    LLMResponse,
    Message,
    StreamAssembler,
    ToolCall,
    ToolCallDelta,
    Usage,
)


def assemble(*chunks: LLMChunk) -> LLMResponse:
    a = StreamAssembler()
    for c in chunks:
        a.add(c)
    return a.response()


def test_usage_sums_and_totals() -> None:
    a = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4)
    b = Usage(input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40)
    assert a + b == Usage(
        input_tokens=11, output_tokens=22, cache_read_tokens=33, cache_write_tokens=44
    )
    assert (a + b).total_tokens == 33


def test_response_as_message_shares_tool_calls() -> None:
    calls = (ToolCall(id="c1", name="add", input={"x": 2}),)
    msg = LLMResponse(text="t", tool_calls=calls).as_message()
    assert msg == Message(role="assistant", content="t", tool_calls=calls)
    assert msg.tool_calls is calls


def test_text_across_chunks() -> None:
    r = assemble(
        LLMChunk(text="Hel"),
        LLMChunk(text="lo"),
        LLMChunk(text="!", usage=Usage(output_tokens=3), finish_reason="stop", model="m1"),
    )
    assert r == LLMResponse(
        text="Hello!", usage=Usage(output_tokens=3), finish_reason="stop", model="m1"
    )


def test_empty_stream() -> None:
    assert assemble() == LLMResponse()


def test_tool_call_fragments_across_chunks() -> None:
    r = assemble(
        LLMChunk(tool_calls=(ToolCallDelta(index=0, id="c1", name="add", arguments='{"x"'),)),
        LLMChunk(
            tool_calls=(
                ToolCallDelta(index=0, arguments=": 2, "),
                ToolCallDelta(index=1, id="c2", name="neg"),
            )
        ),
        LLMChunk(
            tool_calls=(
                ToolCallDelta(index=1, arguments='{"v": -1}'),
                ToolCallDelta(index=0, arguments='"y": 3}'),
            )
        ),
        LLMChunk(usage=Usage(input_tokens=5)),
        LLMChunk(usage=Usage(input_tokens=1, output_tokens=2)),
    )
    assert r.tool_calls == (
        ToolCall(id="c1", name="add", input={"x": 2, "y": 3}),
        ToolCall(id="c2", name="neg", input={"v": -1}),
    )
    assert r.finish_reason == "tool_calls"
    assert r.usage == Usage(input_tokens=6, output_tokens=2)


def test_tool_calls_are_ordered_by_index_and_get_default_ids() -> None:
    r = assemble(
        LLMChunk(tool_calls=(ToolCallDelta(index=3, name="b"), ToolCallDelta(index=1, name="a")))
    )
    assert [(c.id, c.name, c.input) for c in r.tool_calls] == [
        ("call_1", "a", {}),
        ("call_3", "b", {}),
    ]


def test_blank_arguments_mean_no_arguments() -> None:
    r = assemble(LLMChunk(tool_calls=(ToolCallDelta(index=0, name="now", arguments="  "),)))
    assert r.tool_calls[0].input == {}


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ('{"x": ', r"tool call #0 \(add\) has malformed JSON arguments"),
        ("not json", r"malformed JSON arguments"),
        ("[1, 2]", r"tool call #0 \(add\) arguments are not a JSON object"),
        ('"text"', r"not a JSON object"),
    ],
)
def test_malformed_arguments_raise_value_error(arguments: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        assemble(LLMChunk(tool_calls=(ToolCallDelta(index=0, name="add", arguments=arguments),)))


def test_a_tool_call_without_name_raises() -> None:
    with pytest.raises(ValueError, match="never received a name"):
        assemble(LLMChunk(tool_calls=(ToolCallDelta(index=0, arguments="{}"),)))


@settings(deadline=None)  # the shared CI machine is noisy
@given(st.text(), st.lists(st.integers(0, 10), max_size=8))
def test_any_split_of_text_reassembles(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert assemble(*(LLMChunk(text=p) for p in pieces)).text == text


@settings(deadline=None)  # the shared CI machine is noisy
@given(
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4),
    st.integers(1, 6),
)
def test_any_split_of_arguments_reassembles(args: dict[str, object], parts: int) -> None:
    import json

    raw = json.dumps(args)
    size = max(1, len(raw) // parts)
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
    chunks = [LLMChunk(tool_calls=(ToolCallDelta(index=0, id="c", name="f"),))]
    chunks += [LLMChunk(tool_calls=(ToolCallDelta(index=0, arguments=p),)) for p in pieces]
    assert assemble(*chunks).tool_calls == (ToolCall(id="c", name="f", input=args),)


def test_many_argument_fragments() -> None:
    raw = '{"text": "' + "x" * 5000 + '"}'
    chunks = [LLMChunk(tool_calls=(ToolCallDelta(index=0, id="c", name="echo"),))]
    chunks += [LLMChunk(tool_calls=(ToolCallDelta(index=0, arguments=ch),)) for ch in raw]
    assert assemble(*chunks).tool_calls[0].input == {"text": "x" * 5000}
