"""Properties of the PTC strategy and of what the model reads, over generated inputs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from ptcflow.directives import LLMGenerate, RunProgram
from ptcflow.signals import Ok, ProgramOutput, ProgramToolCall
from ptcflow.strategies import PTC, PromptLimit
from ptcflow.strategies._subagent import epoch_ms
from ptcflow.strategies.ptc._feedback import feedback
from ptcflow.strategies.ptc._preview import clj, preview

from .ptc_support import Drive, block

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=40,
)
programs = st.sampled_from(
    [
        "(count ctx/xs)",
        "(return (count ctx/xs))",
        '(return "not an int")',
        "(inc nil)",
        '(fail {:reason :no :message "no"})',
        '(fail "bad")',
        "(def big (vec (range 100)))",
        '(call "nope" {})',
        "(loop [] (recur))",
        "(+ 1",
    ]
)
responses = st.one_of(
    programs.map(block),
    programs,
    st.text(max_size=40),
    st.tuples(programs, programs).map(lambda p: block(p[0]) + block(p[1])),
)


@settings(max_examples=40)
@given(st.lists(responses, min_size=1, max_size=6), st.integers(1, 4))
def test_any_responses_end_the_run_within_its_turns(texts: list[str], max_turns: int) -> None:
    ptc = PTC(
        prompt="Count {{xs}}",
        signature="(xs [:int]) -> :int",
        max_turns=max_turns,
        program_limits={"max_loop_iterations": 100},
    )
    d = Drive(ptc, {"xs": [1, 2, 3]})
    for text in texts:
        if d.status in ("completed", "failed"):
            break
        d.reply(text)
    asks = [x for x in d.directives if isinstance(x, LLMGenerate)]
    assert len(asks) <= max_turns
    programs_run = [x for x in d.directives if isinstance(x, RunProgram)]
    assert len(programs_run) <= len(asks)
    if d.status in ("completed", "failed"):
        assert ptc.outcome(d.state) is not None
        if d.status == "completed":
            assert d.state.value == 3
    else:
        assert d.status == "awaiting_llm" and len(asks) == d.state.turn


@given(json_values, st.integers(10, 300))
def test_previews_respect_their_limit(value: Any, limit: int) -> None:
    text, cut = preview(value, limit)
    assert len(text) <= limit
    whole, never_cut = preview(value, 10**9)  # redacted: "<Firewalled>" may be longer
    assert not never_cut and cut == (len(whole) > limit)
    if not any(isinstance(k, str) and k.startswith("_") for k in _keys(value)):
        assert whole == clj(value)[0]


def _keys(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value, *(k for v in value.values() for k in _keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


@given(json_values, st.lists(st.text(max_size=200), max_size=5), st.integers(0, 30))
def test_feedback_is_bounded_whatever_the_program_produced(
    value: Any, prints: list[str], ncalls: int
) -> None:
    limits = PromptLimit(value_chars=200, print_chars=300, tool_result_chars=80, tool_calls_shown=5)
    calls = tuple(
        ProgramToolCall(index=i, name="t", args={"i": i}, result=Ok(payload=value))
        for i in range(ncalls)
    )
    out = ProgramOutput(value=value, prints=tuple(prints), tool_calls=calls)
    text = feedback(next_turn=2, max_turns=5, source="1", output=out, problem=None, limits=limits)
    assert len(text) < 200 + 300 + 5 * (80 + 120) + 600


@given(
    st.integers(1970, 2200),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
    st.integers(0, 999),
)
def test_signal_times_parse_to_epoch_milliseconds(
    y: int, mo: int, d: int, h: int, mi: int, s: int, ms: int
) -> None:
    import calendar

    stamp = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{ms:03d}Z"
    expected = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) * 1000 + ms
    got = epoch_ms(stamp)
    assert got is not None and abs(got - expected) < 1e-3
    assert epoch_ms("yesterday") is None
