"""The wire-format parsers without I/O: SSE decoding, stream assembly, error helpers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.providers import parse_retry_after
from ptcflow.providers._anthropic_wire import AnthropicStreamState, parse_message, stop_reason
from ptcflow.providers._errors import scrub
from ptcflow.providers._openai_wire import OpenAIStreamState, finish_reason, parse_completion
from ptcflow.providers._sse import SSEDecoder, SSEEvent
from ptcflow.runtime import ProviderError
from ptcflow.signals import StreamAssembler
from ptcflow.testing import _anthropic_replies as aw, _openai_replies as ow

texts = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=40)
names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
calls = st.lists(
    st.builds(
        ow.Call,
        id=st.from_regex(r"call_[a-z0-9]{1,6}", fullmatch=True),
        name=names,
        arguments=st.dictionaries(names, json_values, max_size=4),
    ),
    max_size=3,
    unique_by=lambda c: c.id,
)


def split_points(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for p in [*points, len(data)]:
        pieces.append(data[start:p])
        start = p
    return pieces


def decode_frames(frames: list[bytes], cuts: list[int]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in split_points(b"".join(frames), cuts):
        events += decoder.feed(piece)
    return events + decoder.flush()


@given(
    events=st.lists(st.tuples(st.sampled_from(["", "message_start", "ping"]), texts), max_size=8),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_sse_decoding_does_not_depend_on_how_bytes_are_split(
    events: list[tuple[str, str]], cuts: list[int], newline: str
) -> None:
    frames = []
    for name, data in events:
        head = f"event: {name}{newline}" if name else ""
        frames.append(f": comment{newline}{head}data: {data}{newline}{newline}".encode())
    decoded = decode_frames(frames, cuts)
    assert [(e.event, e.data) for e in decoded] == events


def reference_events(body: bytes) -> list[tuple[str, str, str | None]]:
    """The WHATWG event-stream rules, applied to the whole body at once."""
    events: list[tuple[str, str, str | None]] = []
    name, data, last_id = "", list[str](), None
    text = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    for line in [*text.split("\n"), ""]:
        if not line:
            if data or name:
                events.append((name, "\n".join(data), last_id))
            name, data = "", []
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
            elif field == "id":
                last_id = value
    return events


@given(body=st.binary(max_size=400), cuts=st.lists(st.integers(0, 10_000), max_size=20))
def test_sse_decoder_takes_any_bytes_in_any_split(body: bytes, cuts: list[int]) -> None:
    whole = SSEDecoder()
    at_once = whole.feed(body) + whole.flush()
    assert decode_frames([body], cuts) == at_once  # no exception, whatever the split


@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from(["data", "event", "id", "retry", ":", ""]),
            st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12),
        ),
        max_size=20,
    ),
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(0, 10_000), max_size=10),
)
def test_sse_decoder_follows_the_format(
    lines: list[tuple[str, str]], newline: bytes, cuts: list[int]
) -> None:
    body = newline.join(
        (f"{field}: {value}" if field else "").encode() if field != ":" else f":{value}".encode()
        for field, value in lines
    )
    expected = reference_events(body + newline + newline)
    got = [(e.event, e.data, e.id) for e in decode_frames([body + newline + newline], cuts)]
    assert got == expected


def test_sse_multiline_data_and_unterminated_last_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\ndata: b\n\nid: 7\ndata: c") == [SSEEvent(data="a\nb")]
    assert decoder.flush() == [SSEEvent(data="c", id="7")]


def openai_chunks(turn: ow.Turn) -> list[object]:
    frames = ow.stream_events(turn, include_usage=True)
    return [json.loads(f.decode()[6:]) for f in frames if b"[DONE]" not in f]


@settings(max_examples=60)
@given(text=texts, tool_calls=calls, cached=st.integers(0, 50))
def test_openai_stream_assembles_to_the_non_streamed_response(
    text: str, tool_calls: list[ow.Call], cached: int
) -> None:
    turn = ow.Turn(text=text, calls=tuple(tool_calls), cached_tokens=cached)
    state = OpenAIStreamState()
    assembler = StreamAssembler()
    for chunk in openai_chunks(turn):
        out = state.feed(chunk)
        if out is not None:
            assembler.add(out)
    assembler.add(state.finish())
    assert assembler.response() == parse_completion(ow.completion(turn))


@settings(max_examples=60)
@given(text=texts, tool_calls=calls, read=st.integers(0, 50), write=st.integers(0, 50))
def test_anthropic_stream_assembles_to_the_non_streamed_response(
    text: str, tool_calls: list[ow.Call], read: int, write: int
) -> None:
    turn = aw.Turn(text=text, calls=tuple(tool_calls), cache_read=read, cache_write=write)
    state = AnthropicStreamState()
    assembler = StreamAssembler()
    for frame in aw.stream_events(turn):
        data = json.loads(frame.decode().split("data: ", 1)[1])
        out = state.feed(data)
        if out is not None:
            assembler.add(out)
    assembler.add(state.finish())
    assert assembler.response() == parse_message(aw.message(turn))


@given(st.one_of(json_values, st.dictionaries(names, json_values)))
def test_parsers_reject_any_other_shape_with_a_provider_error(data: object) -> None:
    for parse in (parse_completion, parse_message):
        try:
            parse(data)
        except ProviderError as exc:
            assert exc.envelope.type == "provider_error"
            assert not exc.envelope.retryable


def test_finish_and_stop_reasons() -> None:
    assert [finish_reason(r) for r in ("stop", "length", "tool_calls", "content_filter")] == [
        "stop",
        "length",
        "tool_calls",
        "content_filter",
    ]
    assert finish_reason(None) is None and finish_reason("EOS") == "eos"
    assert [stop_reason(r) for r in ("end_turn", "max_tokens", "tool_use", "refusal")] == [
        "stop",
        "length",
        "tool_calls",
        "content_filter",
    ]


def test_malformed_tool_arguments_keep_the_raw_text() -> None:
    body = ow.completion(ow.Turn(calls=(ow.Call("c", "add", {}),)))
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"a": 1,'
    with pytest.raises(ProviderError) as info:
        parse_completion(body)
    assert info.value.envelope.details["body"] == '{"a": 1,'


def test_anthropic_stream_error_event_and_orphan_json_delta() -> None:
    state = AnthropicStreamState()
    with pytest.raises(ProviderError) as info:
        state.feed({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}})
    assert info.value.envelope.type == "rate_limited"
    delta = {"type": "input_json_delta", "partial_json": "{}"}
    with pytest.raises(ProviderError, match="no tool_use block"):
        state.feed({"type": "content_block_delta", "index": 3, "delta": delta})


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after({"retry-after": date}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": date}, now=1445412500.0) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


@given(secret=st.text(min_size=6, max_size=40), around=texts)
def test_scrub_removes_every_occurrence(secret: str, around: str) -> None:
    text = scrub(f"{around}{secret}{around}{secret}", [secret])
    assert secret not in text
