"""The pieces that need no server: options, references, placement, the codec."""

from __future__ import annotations

import ast
import importlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from temporalio.api.common.v1 import Payload
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    RetryState,
    TimeoutError,
    TimeoutType,
)

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.errors import ConfigError, UsageError
from ptcflow.runtime import RetryPolicy
from ptcflow.signals import Message
from ptcflow.strategies import ReAct
from ptcflow.temporal import TemporalOptions
from ptcflow.temporal._converter import ZlibCodec
from ptcflow.temporal._placement import failure_of, is_lost_worker, place
from ptcflow.temporal._refs import agent_ref, load, tool_ref
from ptcflow.temporal._spec import RunSpec, payload_size
from ptcflow.tools import tool
from temporal.agents import Loose, add, planner


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"task_queue": ""}, "task_queue"),
        ({"tool_queues": {"x": " "}}, "tool_queues['x']"),
        ({"heartbeat_timeout_ms": 0}, "heartbeat_timeout_ms"),
        ({"lost_worker_retries": -1}, "lost_worker_retries"),
        ({"worker_grace_ms": 0}, "worker_grace_ms"),
        ({"max_payload_bytes": 0}, "max_payload_bytes"),
        ({"local_tools": {"add"}}, "local_tools"),
    ],
)
def test_bad_options_name_their_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"TemporalOptions.{field}".replace("[", r"\[")):
        TemporalOptions(**kwargs)


def test_worker_loss_is_unbounded_by_default_and_a_silent_worker_gets_a_grace() -> None:
    assert TemporalOptions().lost_worker_retries is None
    assert TemporalOptions(heartbeat_timeout_ms=1_000).grace_ms == 5_000
    assert TemporalOptions(heartbeat_timeout_ms=30_000).grace_ms == 30_000
    assert TemporalOptions(worker_grace_ms=700).grace_ms == 700


def test_a_tool_cannot_be_both_local_and_routed() -> None:
    with pytest.raises(ConfigError, match="both local_tools and routed"):
        TemporalOptions(local_tools=frozenset({"add"}), tool_queues={"add": "pool"})


def test_strategies_and_tools_travel_by_reference() -> None:
    ref = agent_ref(planner())
    assert ref.path == "temporal.agents:Delegate" and ref.build() == planner()
    assert agent_ref(ReAct(name="x")).build() == ReAct(name="x")
    slow = tool(add, timeout_ms=500, max_retries=2)
    built = tool_ref(slow).build()
    assert (built.name, built.timeout_ms, built.max_retries) == ("add", 500, 2)
    assert load("temporal.agents:add") is add


def test_a_strategy_that_does_not_come_back_equal_is_refused() -> None:
    with pytest.raises(UsageError, match="does not come back equal from JSON"):
        agent_ref(Loose(inner=ReAct()))


def test_a_strategy_defined_in_a_function_is_refused_with_the_fix() -> None:
    class Inner(msgspec.Struct, frozen=True):
        def init(self, run: Any) -> Any: ...

        def handle(self, state: Any, signal: Any) -> Any: ...

    with pytest.raises(UsageError, match="define it at module level"):
        agent_ref(Inner())


def test_placement_maps_a_directive_to_activity_options() -> None:
    spec = RunSpec(
        agent=agent_ref(ReAct()),
        run_id="r",
        tools=(tool_ref(tool(add, timeout_ms=1_000, max_retries=3)),),
        options=TemporalOptions(task_queue="q", llm_queue="models", tool_queues={"add": "pool"}),
        retry=RetryPolicy(multiplier=3.0, max_backoff_ms=5_000),
    )
    tools = {t.name: t for t in spec.tools}
    call = ToolExec(id="t1", tool_name="add", timeout_ms=20_000, retry_backoff_ms=100)
    where = place(spec, tools, call, now=100.0, deadline=110.0)
    assert where.task_queue == "pool" and where.max_attempts == 4  # the tool's own retries
    assert where.schedule_to_close == timedelta(seconds=10)  # the run's remaining time
    assert where.start_to_close == timedelta(seconds=6)  # its 1 s attempt + grace
    assert where.retry.initial_interval == timedelta(milliseconds=100)
    assert where.retry.backoff_coefficient == 3.0
    assert where.retry.maximum_interval == timedelta(seconds=5)
    llm = LLMGenerate(id="l1", messages=(Message(role="user", content="hi"),))
    assert place(spec, tools, llm, now=0.0, deadline=float("inf")).task_queue == "models"


def test_temporal_failures_become_the_directives_errors() -> None:
    d = ToolExec(id="t1", tool_name="add")

    def activity_error(cause: BaseException) -> ActivityError:
        error = ActivityError(
            "failed",
            scheduled_event_id=1,
            started_event_id=2,
            identity="w",
            activity_type="ptcflow.perform",
            activity_id="t1",
            retry_state=RetryState.MAXIMUM_ATTEMPTS_REACHED,
        )
        error.__cause__ = cause
        return error

    lost = activity_error(TimeoutError("hb", type=TimeoutType.HEARTBEAT, last_heartbeat_details=[]))
    assert is_lost_worker(lost)
    error = failure_of(d, lost, 4).error
    assert error.type == "transient" and error.details == {"scope": "worker", "lost": 4}
    assert "lost 4 time(s) without making progress" in error.message
    assert "did not answer on its own task queue" in error.message
    late = activity_error(
        TimeoutError("s2c", type=TimeoutType.SCHEDULE_TO_CLOSE, last_heartbeat_details=[])
    )
    assert failure_of(d, late, 1).error.type == "timeout" and not is_lost_worker(late)
    odd = activity_error(ApplicationError("boom", type="NotFoundError"))
    assert failure_of(d, odd, 1).error.type == "internal"


def test_the_codec_compresses_large_payloads_and_gives_them_back() -> None:
    codec = ZlibCodec(threshold=100)
    small = Payload(metadata={"encoding": b"json/plain"}, data=b"1")
    large = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"a" * 10_000 + b'"')

    async def roundtrip() -> None:
        encoded = await codec.encode([small, large])
        assert encoded[0] == small and encoded[1].metadata["encoding"] == b"binary/zlib"
        assert encoded[1].ByteSize() < 200
        assert await codec.decode(encoded) == [small, large]

    anyio.run(roundtrip)


def test_payload_size_compresses_only_past_the_limit() -> None:
    text = "a" * 10_000
    assert payload_size(text, 20_000) == 10_002
    assert payload_size(text, 1_000) < 1_000


def test_workflow_code_uses_temporal_and_asyncio_only() -> None:
    """anyio does not run in Temporal's workflow sandbox: the modules the workflow executes
    (its own and the run core's) do not import it."""
    workflow_side = (
        "ptcflow.temporal._workflow",
        "ptcflow.temporal._drive",
        "ptcflow.temporal._report",
        "ptcflow.core._core",
        "ptcflow.core._flight",
        "ptcflow.core._step",
        "ptcflow.core._terminals",
    )
    for name in workflow_side:
        module = importlib.import_module(name)
        assert module.__file__ is not None
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        }
        assert "anyio" not in imported and "trio" not in imported, name


_RACE = """
import sys, threading, msgspec
from ptcflow.temporal._worker import workflow_runner

sys.setswitchinterval(1e-6)  # switch threads as often as possible
data = msgspec.json.encode({f"x{i}": {f"f{j}": j for j in range(20)} for i in range(30)})
for _ in range(100):  # fresh classes each time: none has its decoding information yet
    leaves = [
        msgspec.defstruct(f"Leaf{i}", [(f"f{j}", int, 0) for j in range(20)], module="fresh")
        for i in range(30)
    ]
    fields = [(f"x{i}", leaf | None, None) for i, leaf in enumerate(leaves)]
    top = msgspec.defstruct("Top", fields, module="fresh")
    workflow_runner(passthrough=["fresh"])  # what every worker and replayer calls first
    start = threading.Barrier(4)

    def decode():
        start.wait()
        msgspec.json.decode(data, type=top)

    threads = [threading.Thread(target=decode) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print("ok")
"""


def test_struct_types_prepared_before_threads_decode_them_do_not_crash_the_process() -> None:
    """Four threads decoding the same new Struct class at once: without
    ``workflow_runner``'s ``prepare_struct_types`` this process dies of a segmentation fault (msgspec 0.22
    publishes a class's decoding information before filling it in; 3 runs of 3 crashed),
    which is how worker processes died in the durability tests. Workers and replayers
    prepare ptcflow's classes, and their passthrough modules', before their threads start."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _RACE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_prepare_struct_types_covers_ptcflow_and_the_passthrough_modules() -> None:
    from ptcflow.temporal._converter import prepare_struct_types

    own = prepare_struct_types()
    assert own >= 50  # directives, signals, specs, the Step, ...
    assert prepare_struct_types(["temporal.agents"]) > own  # the tests' own strategies


@pytest.mark.parametrize(
    ("old", "name"),
    [
        # paths that payloads stored before the floor plan's moves (release 0.1)
        ("ptcflow.strategies._ptc_state:PtcState", "PtcState"),
        ("ptcflow.strategies._ptc_state:PtcTurn", "PtcTurn"),
        ("ptcflow.strategies._ptc:PTC", "PTC"),
        ("ptcflow.strategies._react:ReAct", "ReAct"),
        ("ptcflow.strategies._react_state:ReActState", "ReActState"),
        ("ptcflow.strategies._json_agent:JsonState", "JsonState"),
        ("ptcflow.strategies._json_agent:JsonAgent", "JsonAgent"),
    ],
)
def test_class_paths_stored_before_the_move_still_load(old: str, name: str) -> None:
    import ptcflow.strategies
    from ptcflow.temporal._refs import load, public_path

    cls = getattr(ptcflow.strategies, name)
    assert load(old) is cls
    assert load(public_path(cls)) is cls


def test_a_path_that_names_nothing_still_fails() -> None:
    from ptcflow.temporal._refs import load

    with pytest.raises(AttributeError):
        load("ptcflow.strategies._ptc_state:NoSuchClass")
    with pytest.raises(ModuleNotFoundError):
        load("notapackage._x:Y")
