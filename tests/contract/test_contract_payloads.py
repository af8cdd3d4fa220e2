"""Every signal payload is JSON: whatever a tool returns or the model says (hypothesis)."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
from contract_kit import CASES, Recorder, check_contract
from hypothesis import HealthCheck, given, settings, strategies as st

from ptcflow.runtime import Runtime, Step
from ptcflow.testing import ScriptedLLM

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.binary(max_size=8)
    | st.builds(object)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers(), max_size=3)
        | st.dictionaries(st.sampled_from(["a", "api_key", "b_token", "n", "ü"]), inner, max_size=4)
    ),
    max_leaves=12,
)
# 64-bit integers: a PTC program cannot write a larger literal
arguments = st.dictionaries(
    st.text(min_size=1, max_size=8), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8)
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values, args=arguments, text=st.text(max_size=40), case=st.sampled_from(CASES))
def test_any_tool_output_and_model_text_give_json_signals(
    value: Any, args: dict[str, Any], text: str, case: Any
) -> None:
    async def echo(**kwargs: Any) -> Any:
        """Returns the generated value."""
        return value

    async def main() -> tuple[Step, Recorder, ScriptedLLM]:
        llm = ScriptedLLM([case.calls([("echo", args)]), case.answer(text)])
        recorder = Recorder(case.make())
        async with Runtime(llm=llm, tools={"echo": echo}) as rt:
            return await rt.run(recorder, case.input, record=True), recorder, llm

    step, recorder, llm = anyio.run(main)
    assert step.ok, step.error
    check_contract(step, recorder)
    (seen,) = case.results_seen(llm.requests[-1])  # the model saw the (JSON-safe) result
    assert msgspec.json.decode(msgspec.json.encode(seen)) == seen
