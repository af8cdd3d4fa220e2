"""What ``pip install ptcflow`` (and each extra) gets works, in a fresh virtual environment.

The wheel is built once from a copy of the sources; each case installs it into its own
new venv (pinned by requirements/constraints.txt, from the package registry) and runs a
short script there: with no extras, every public module imports and the demo runs; each
extra enables what it is for. About a minute in all, most of it pip (see docs/testing.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

NO_EXTRAS = """
import importlib, pkgutil, subprocess, sys
import ptcflow
names = [info.name for info in pkgutil.walk_packages(ptcflow.__path__, "ptcflow.")
         if not any(part.startswith("_") for part in info.name.split("."))]
for name in names:
    importlib.import_module(name)
from ptcflow.errors import ConfigError
from ptcflow.providers import OpenAIProvider
import anyio
async def connect():
    async with OpenAIProvider(api_key="sk-x"):
        pass
try:
    anyio.run(connect)
except ConfigError as exc:
    assert "pip install 'ptcflow[openai]'" in str(exc), exc
else:
    raise AssertionError("the openai SDK is installed without its extra")
demo = subprocess.run([sys.executable, "-m", "ptcflow.cli", "demo", "--agents", "5",
                       "--latency-ms", "0"], capture_output=True, text=True, check=True)
assert "5/5 completed" in demo.stdout, demo.stdout
print("imported", len(names), "modules")
"""

OTEL = """
from opentelemetry.sdk.trace import TracerProvider
from ptcflow.runtime import Telemetry
assert Telemetry(tracer_provider=TracerProvider()).tracing
"""

PROVIDER = """
import anyio
from ptcflow.providers import {cls}
from ptcflow.runtime import LLMRequest
from ptcflow.signals import Message
from ptcflow.testing import open_model_server
async def main() -> str:
    async with open_model_server(["hello"]) as server:
        url = server.openai_url if "{cls}" == "OpenAIProvider" else server.base_url
        async with {cls}(base_url=url, api_key="sk-local", model="m") as p:
            hi = (Message(role="user", content="hi"),)
            return (await p.generate(LLMRequest(model="", messages=hi))).text
assert anyio.run(main) == "hello"
"""

MCP = """
import sys, anyio
from ptcflow.mcp import from_mcp_server
from ptcflow.tools import ToolCall, dispatch
async def main() -> object:
    async with from_mcp_server([sys.executable, {server!r}]) as tools:
        call = ToolCall(id="1", name="population", input={{"city": "Lyon"}})
        return (await dispatch([tools], call)).output
assert anyio.run(main) == 522_250
"""

PYDANTIC = """
import sys, anyio, pydantic
from ptcflow.tools import call_tool, tool
class Point(pydantic.BaseModel):
    x: int
    y: int
@tool
def flip(p: Point) -> Point:
    return Point(x=p.y, y=p.x)
result = anyio.run(call_tool, flip, "c1", {"p": {"x": 1, "y": 2}})
assert result.payload == {"x": 2, "y": 1}, result
"""

CASES = {
    "": NO_EXTRAS,
    "otel": OTEL,
    "openai": PROVIDER.format(cls="OpenAIProvider"),
    "anthropic": PROVIDER.format(cls="AnthropicProvider"),
    "mcp": MCP.format(server=str(ROOT / "examples" / "providers_mcp_server.py")),
    "pydantic": PYDANTIC,
}


def pip(*args: str) -> None:
    env = {**os.environ, "PIP_CONSTRAINT": str(ROOT / "requirements" / "constraints.txt")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    subprocess.run([sys.executable, "-m", "pip", "-q", *args], check=True, env=env)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    source = tmp_path_factory.mktemp("source")
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / item, source / item)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    pip("wheel", "--no-deps", "-w", str(out), str(source))
    (built,) = out.glob("ptcflow-*.whl")
    yield built


@pytest.mark.parametrize("extra", list(CASES), ids=[e or "no-extras" for e in CASES])
def test_the_wheel_works_in_a_fresh_venv(extra: str, wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip("--python", str(python), "install", f"{wheel}[{extra}]" if extra else str(wheel))
    script = textwrap.dedent(CASES[extra])
    done = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
