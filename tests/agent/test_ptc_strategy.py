"""The PTC strategy as plain functions: turns, feedback, return/fail, modes, limits."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest

from ptcflow.directives import LLMGenerate, RunProgram
from ptcflow.signals import ErrorEnvelope, Ok, ProgramOutput, Usage
from ptcflow.strategies import PTC, PromptLimit, RunInfo
from ptcflow.testing import SignalFactory

from .ptc_support import Drive, block

EMAILS = [
    {"id": 1, "subject": "Urgent: invoice", "urgent": True},
    {"id": 2, "subject": "Lunch?", "urgent": False},
    {"id": 3, "subject": "Urgent: outage", "urgent": True},
]
FINDER = PTC(
    prompt="Find urgent emails for {{user}}",
    signature="(user :string) -> {count :int, _ids [:int]}",
)


def finder(ptc: PTC = FINDER) -> Drive:
    return Drive(ptc, {"user": "alice"}, {"list_emails": lambda user: EMAILS})


def test_a_multi_turn_run_returns_the_validated_value() -> None:
    d = finder()
    d.reply(block('(def mails (call "list_emails" {:user ctx/user}))\n(count mails)'))
    assert d.status == "awaiting_llm"
    feedback = d.last_prompt
    assert feedback.startswith("Turn 2 of 5.")
    assert 'list_emails {:user "alice"} -> 3 items' in feedback
    assert "Value of your program:\n3" in feedback
    d.reply(block("(let [u (filter :urgent mails)] (return {:count (count u) :_ids (map :id u)}))"))
    assert d.status == "completed" and d.state.reason == "returned"
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.result == Ok(payload={"count": 2, "_ids": [1, 3]})
    assert [type(x).__name__ for x in d.directives] == [
        "LLMGenerate", "RunProgram", "LLMGenerate", "RunProgram",
    ]  # fmt: skip
    assert [x.id for x in d.directives] == ["r1/llm/1", "r1/program/1", "r1/llm/2", "r1/program/2"]


def test_the_history_keeps_only_the_code_of_each_response() -> None:
    d = finder()
    d.reply("Let me think.\n```clojure\n(count ctx/user)\n```\nThat should work.")
    llm = d.pending[0]
    assert isinstance(llm, LLMGenerate)
    assistant = [m.content for m in llm.messages if m.role == "assistant"]
    assert assistant == ["```clojure\n(count ctx/user)\n```"]


def test_a_program_error_is_fed_back_with_position_and_as_ctx_fail() -> None:
    d = finder()
    d.reply(block('(let [n (count ctx/user)]\n  (+ n "x"))'))
    text = d.last_prompt
    assert "Your program failed: type error at line 2, column 3" in text
    assert '\n2 |   (+ n "x"))\n      ^\n' in text
    d.reply(block("(return {:count (:line ctx/fail) :_ids [(:column ctx/fail)]})"))
    assert d.status == "completed"
    assert d.state.value == {"count": 2, "_ids": [3]}


def test_ctx_fail_holds_the_previous_turns_problem_and_goes_away_after_a_good_turn() -> None:
    d = finder()
    d.reply(block("(inc nil)"))
    d.reply(block("ctx/fail"))
    error = d.outputs[0].error
    assert error is not None
    assert d.outputs[-1].value == {
        "turn": 1,
        "category": "type",
        "message": error.message,
        "line": 1,
        "column": 1,
    }
    d.reply(block("(count ctx/user)"))
    first, second, third = [x for x in d.directives if isinstance(x, RunProgram)]
    assert "fail" not in first.ctx and "fail" in second.ctx and "fail" not in third.ctx


def test_a_return_that_does_not_match_is_fed_back_with_paths() -> None:
    d = finder()
    d.reply(block('(return {:count "two" :_ids [1 "x"]})'))
    text = d.last_prompt
    assert "Your (return ...) was not accepted" in text
    assert '- count: expected int, got string "two"' in text
    assert '- _ids[1]: expected int, got string "x"' in text
    assert d.status == "awaiting_llm"


@pytest.mark.parametrize(
    ("mode", "value", "ok"),
    [
        ("enabled", "{:count 1 :_ids [] :extra 1}", True),
        ("strict", "{:count 1 :_ids [] :extra 1}", False),
        ("warn_only", '{:count "1" :_ids []}', True),
        ("disabled", "[1 2]", True),
        ("enabled", '{:count "1" :_ids []}', False),
    ],
)
def test_validation_modes(mode: str, value: str, ok: bool) -> None:
    d = finder(msgspec.structs.replace(FINDER, signature_validation=mode))
    d.reply(block(f"(return {value})"))
    assert (d.status == "completed") is ok


def test_warn_only_keeps_the_warning_in_the_trace() -> None:
    d = finder(msgspec.structs.replace(FINDER, signature_validation="warn_only"))
    d.reply(block('(return {:count "1" :_ids []})'))
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.trace is not None
    error = outcome.trace.turns[0].execution.error
    assert error is not None and error.category == "validation_warning"


def test_fail_ends_the_run_with_reason_message_op_and_details() -> None:
    d = finder()
    d.reply(
        block('(fail {:reason :not_found :message "no such user" :op "lookup" :details {:u 1}})')
    )
    assert d.status == "failed" and d.state.reason == "fail"
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.fail is not None
    assert (outcome.fail.reason, outcome.fail.message, outcome.fail.op, outcome.fail.details) == (
        "not_found", "no such user", "lookup", {"u": 1},
    )  # fmt: skip
    assert outcome.result.error.type == "fail"  # type: ignore[union-attr]


def test_a_fail_without_reason_or_message_is_fed_back() -> None:
    d = finder()
    d.reply(block('(fail "oops")'))
    assert d.status == "awaiting_llm"
    assert "Your (fail ...) was not accepted" in d.last_prompt
    d.reply(block("(fail {:reason :x})"))
    assert ":message is missing" in d.last_prompt


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("I cannot write code today.", "no program found"),
        ("```clojure\n(+ 1 2)\n```\n```clojure\n(+ 3 4)\n```", "found 2 code blocks"),
        ("```python\nprint(1)\n```", "found a code block in python"),
    ],
)
def test_responses_without_one_program_get_a_reminder_turn(response: str, expected: str) -> None:
    d = finder()
    d.reply(response)
    assert d.status == "awaiting_llm" and expected in d.last_prompt
    assert not [x for x in d.directives if isinstance(x, RunProgram)]
    outcome_trace = d.state.turns[0]
    assert outcome_trace.problem is not None and outcome_trace.problem.category == "no_code"


def test_smart_quotes_and_bare_code_are_accepted() -> None:
    d = finder()
    d.reply("(return {:count (count “ab”) :_ids []})")
    assert d.status == "completed" and d.state.value == {"count": 2, "_ids": []}


def test_running_out_of_turns_is_a_failed_step_with_its_own_reason() -> None:
    d = finder(msgspec.structs.replace(FINDER, max_turns=3))
    d.reply(block("(count ctx/user)"))
    assert d.last_prompt.startswith("Turn 2 of 3.")
    d.reply(block("(count ctx/user)"))
    assert d.last_prompt.startswith(
        "Turn 3 of 3. This is your last turn: end it with (return ...) or (fail ...)."
    )
    d.reply(block("(inc nil)"))
    assert d.status == "failed" and d.state.reason == "max_turns_exceeded"
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.fail is not None
    assert outcome.fail.message.startswith("no (return ...) after 3 turns; the last turn ended")
    assert len([x for x in d.directives if isinstance(x, LLMGenerate)]) == 3


def test_judgment_mode_answers_with_the_value_in_one_turn() -> None:
    ptc = PTC(prompt="{{x}} + {{y}}", max_turns=1)
    d = Drive(ptc, {"x": 10, "y": 5})
    assert d.state.judgment
    d.reply(block("(+ ctx/x ctx/y)"))
    assert (d.status, d.state.value, d.state.reason) == ("completed", 15, "answered")


def test_judgment_mode_has_no_tools_and_no_retry() -> None:
    ptc = PTC(prompt="Compute", max_turns=1)
    d = Drive(ptc)
    d.reply(block('(call "search" {:q "x"})'))
    assert d.status == "failed" and d.state.reason == "program_error"
    assert d.state.fail is not None and 'unknown tool "search"' in d.state.fail.message


def test_one_turn_with_tools_is_agent_mode() -> None:
    d = Drive(PTC(prompt="Go", max_turns=1), tools={"t": lambda: 1})
    assert not d.state.judgment
    d.reply(block('(call "t" {})'))
    assert d.state.reason == "max_turns_exceeded"


def test_a_plain_map_value_is_merged_into_ctx_for_the_next_turn() -> None:
    d = finder()
    d.reply(block('{:_ids [7 8] :note "kept"}'))
    assert '{:_ids <Firewalled>, :note "kept"}' in d.last_prompt
    d.reply(block("(return {:count (count ctx/_ids) :_ids ctx/_ids})"))
    assert d.state.value == {"count": 2, "_ids": [7, 8]}


def test_firewalled_fields_are_hidden_everywhere_the_model_looks() -> None:
    secret = "S3CRET-ROWS"
    d = Drive(
        FINDER,
        {"user": "alice", "_rows": [secret]},
        {"fetch": lambda: {"visible": 1, "_raw": secret}},
    )
    d.reply(
        block('(def r (call "fetch" {}))\n(println "visible" (:visible r))\n{:v 1 :_raw (:_raw r)}')
    )
    d.reply(block("(return {:count (count ctx/_rows) :_ids [(count (:_raw r))]})"))
    assert d.status == "completed"
    sent = [m.content for x in d.directives if isinstance(x, LLMGenerate) for m in x.messages]
    assert all(secret not in text for text in sent)
    assert "ctx/_rows <Firewalled>" in sent[0]
    program = next(x for x in d.directives if isinstance(x, RunProgram))
    assert program.ctx["_rows"] == [secret]  # the program sees it
    assert d.outputs[0].tool_calls[0].result.payload["_raw"] == secret  # type: ignore[union-attr]


def test_values_are_cut_to_the_prompt_limit_and_input_grows_linearly() -> None:
    ptc = msgspec.structs.replace(FINDER, max_turns=6, prompt_limit=PromptLimit(value_chars=120))
    d = Drive(
        ptc, {"user": "alice"}, {"big": lambda: [{"i": i, "text": "x" * 50} for i in range(2000)]}
    )
    sizes = []
    for _ in range(5):
        d.reply(block('(call "big" {})'))
        llm = d.pending[0]
        assert isinstance(llm, LLMGenerate)
        sizes.append(sum(len(m.content) for m in llm.messages))
    assert "(truncated: print or return only the fields you need)" in d.last_prompt
    growth = [b - a for a, b in itertools.pairwise(sizes)]
    assert max(growth) < 700  # each turn adds a bounded message, whatever the value's size


def test_the_memory_limit_ends_the_run_with_its_reason() -> None:
    d = finder(msgspec.structs.replace(FINDER, memory_limit_bytes=1000))
    d.reply(block('(def big (apply str (repeat 2000 "x")))\n(count big)'))
    assert d.status == "failed" and d.state.reason == "memory_limit"
    assert d.state.fail is not None and "over its limit of 1000" in d.state.fail.message


def test_memory_and_functions_persist_across_turns() -> None:
    d = finder()
    d.reply(block("(defn urgent [ms] (filter :urgent ms))\n(memory/put :seen 2)\n(def n 1)"))
    d.reply(
        block("(return {:count (+ n memory/seen) :_ids (map :id (urgent [{:id 9 :urgent true}]))})")
    )
    assert d.state.value == {"count": 3, "_ids": [9]}


def test_a_function_that_cannot_be_kept_is_reported_to_the_model() -> None:
    d = finder()
    d.reply(block("(let [k 2] (defn add-k [x] (+ x k)))\n1"))
    assert "Not kept for the next turn:\n- add-k" in d.last_prompt


def test_a_missing_placeholder_fails_before_any_model_call() -> None:
    state, directives = FINDER.init(RunInfo(run_id="r1", input={"name": "x"}))
    assert directives == ()
    assert state.status == "failed" and state.reason == "missing_context"
    assert state.fail is not None and "{{user}} has no value" in state.fail.message


@pytest.mark.parametrize("bad", [[1, 2], "text", {1: "x"}])
def test_a_context_that_is_not_a_string_keyed_map_fails_at_once(bad: Any) -> None:
    state, directives = FINDER.init(RunInfo(run_id="r1", input=bad))
    assert directives == () and state.reason == "invalid_input"


def test_llm_and_program_infrastructure_errors_fail_the_run() -> None:
    d = finder()
    llm = d.pending.pop(0)
    d.feed(d.sig.llm_response(llm, ErrorEnvelope.make("auth", "bad key")))
    assert (d.status, d.state.reason) == ("failed", "llm_error")
    assert d.state.error is not None and d.state.error.type == "auth"
    d = finder()
    llm = d.pending.pop(0)
    for s in d.sig.llm_reply(llm, block("1")):
        d.feed(s)
    program = d.pending.pop(0)
    d.feed(d.sig.program_result(program, ErrorEnvelope.make("cancelled", "run ended")))
    assert (d.status, d.state.reason) == ("failed", "cancelled")


def test_a_program_answered_by_a_tool_result_error_fails_the_run_with_its_message() -> None:
    d = finder()
    llm = d.pending.pop(0)
    for s in d.sig.llm_reply(llm, block("1")):
        d.feed(s)
    program = d.pending.pop(0)
    message = "no handler is registered for directive kind RunProgram"
    d.feed(d.sig.tool_result(program, ErrorEnvelope.make("validation", message)))
    assert d.status == "failed" and d.state.fail is not None
    assert message in d.state.fail.message


def test_the_programs_own_tool_signals_and_stale_ids_are_ignored() -> None:
    d = finder()
    llm = d.pending.pop(0)
    for s in d.sig.llm_reply(llm, block('(call "list_emails" {:user "a"})')):
        d.feed(s)
    state = d.state
    program = d.pending[0]
    for s in [
        *d.sig.tool_reply(f"{program.id}/tool/0", EMAILS, tool_name="list_emails"),
        *d.sig.llm_reply("r1/llm/1", "late duplicate"),
        d.sig.program_result("r1/program/9", ProgramOutput(value=1)),
        d.sig.make("x.custom", {"a": 1}),
    ]:
        d.feed(s)
        assert d.state is state


def test_a_cancelled_run_keeps_its_trace() -> None:
    d = finder()
    d.reply(block("(count ctx/user)"))
    d.feed(d.sig.request_failed())
    assert d.status == "failed" and d.state.reason == "cancelled"
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.trace is not None and len(outcome.trace.turns) == 1


@pytest.mark.parametrize(("trace", "kept_ok", "kept_failed"), [(True, True, True), ("on_error", False, True), (False, False, False)])  # fmt: skip
def test_trace_option(trace: bool | str, kept_ok: bool, kept_failed: bool) -> None:
    ptc = msgspec.structs.replace(FINDER, trace=trace)
    ok = finder(ptc)
    ok.reply(block("(return {:count 1 :_ids []})"))
    failed = finder(ptc)
    failed.reply(block('(fail {:reason :no :message "no"})'))
    ok_outcome, failed_outcome = ptc.outcome(ok.state), ptc.outcome(failed.state)
    assert ok_outcome is not None and failed_outcome is not None
    assert (ok_outcome.trace is not None, failed_outcome.trace is not None) == (
        kept_ok,
        kept_failed,
    )


def test_the_trace_follows_the_spec_and_debug_adds_ast_and_context() -> None:
    d = finder(msgspec.structs.replace(FINDER, debug=True))
    d.reply(
        block('(def m (call "list_emails" {:user ctx/user}))\n(count m)'),
        Usage(input_tokens=100, output_tokens=20),
    )
    d.reply(block("(return {:count 2 :_ids [1 3]})"), Usage(input_tokens=150, output_tokens=9))
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.trace is not None
    first, second = outcome.trace.turns
    assert first.turn == 1 and first.prompt.expanded_template == "Find urgent emails for alice"
    assert first.prompt.messages[0].role == "system" and len(first.prompt.messages) == 2
    assert len(second.prompt.messages) == 4
    assert first.program.source is not None and first.program.ast is not None
    assert first.execution.tool_calls[0].name == "list_emails"
    assert first.execution.tool_calls[0].result == EMAILS
    assert first.execution.result == 3 and first.execution.context_snapshot == {"user": "alice"}
    assert first.execution.memory is not None and "m" in first.execution.memory
    assert (first.tokens.input, first.tokens.output) == (100, 20)
    assert outcome.trace.total_tokens.input == 250
    assert first.timestamp == "2026-01-01T00:00:00Z"
    assert outcome.signature == FINDER.signature


def test_snapshot_is_plain_json_and_the_state_decodes_back() -> None:
    d = finder()
    d.reply(block("(count ctx/user)"))
    snap = FINDER.snapshot(d.state)
    assert msgspec.json.decode(msgspec.json.encode(snap)) == snap
    from ptcflow.strategies import PtcState

    assert msgspec.convert(snap, PtcState) == d.state


def test_directive_ids_and_options_come_from_the_config() -> None:
    ptc = msgspec.structs.replace(
        FINDER,
        model="haiku",
        llm_options={"temperature": 0},
        llm_max_retries=4,
        llm_retry_backoff_ms=50,
        program_limits={"timeout_ms": 1000},
        program_timeout_ms=3000,
    )
    sig = SignalFactory("r2")
    state, (llm,) = ptc.init(RunInfo(run_id="r2", input={"user": "a"}))
    assert isinstance(llm, LLMGenerate)
    assert (llm.model, llm.options, llm.max_retries, llm.retry_backoff_ms) == (
        "haiku",
        {"temperature": 0},
        4,
        50,
    )
    state, (program,) = ptc.handle(state, sig.llm_reply(llm, block("1"))[1])
    assert isinstance(program, RunProgram)
    assert (program.limits, program.timeout_ms, program.iteration) == (
        {"timeout_ms": 1000},
        3000,
        1,
    )
