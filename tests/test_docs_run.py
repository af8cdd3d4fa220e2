"""Every ``python`` block of README.md and docs/*.md runs as written.

The convention (docs/testing.md, "Examples in the documentation"), read from the block's
first line, which a reader sees too:

* ``# continues the previous example`` - the block runs in the namespace the previous
  block of the same page left (it uses its names);
* ``# not run: <why>`` - the block is only compiled (an outline, a program that needs a
  service the test cannot start);
* any other block runs alone, in a fresh namespace.

A fence with a tag after the language (````` ```python program-kind `````) marks a block
that a page's own test runs with a setup of its own: here it is only compiled.

Every block runs from a scratch directory in which ``examples/`` is the repository's, with
the environment a user with keys would have, pointed at the local model server
(``ptcflow.testing.open_model_server``): blocks that call OpenAI or Anthropic make real
HTTP requests to it. A block that fails names its page, its number and its first line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal

from ptcflow.testing import ModelServer, open_model_server

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python(?P<tag>[^\n]*)\n(?P<body>.*?)^```", re.S | re.M)
CONTINUES = "# continues the previous example"
NOT_RUN = "# not run:"


@dataclass
class Block:
    """One ``python`` block of a page."""

    page: str
    number: int
    line: int
    source: str
    continues: bool = False
    runs: bool = True
    tagged: bool = False
    previous: Block | None = field(default=None, repr=False)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} (block {self.number})"


def blocks_of(page: Path, root: Path = ROOT) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for number, match in enumerate(FENCE.finditer(text), 1):
        source = match["body"]
        first = source.lstrip().splitlines()[0] if source.strip() else ""
        block = Block(
            page=str(page.relative_to(root)),
            number=number,
            line=text.count("\n", 0, match.start()) + 2,
            source=source,
            continues=first.startswith(CONTINUES),
            runs=not first.startswith(NOT_RUN) and not match["tag"].strip(),
            tagged=bool(match["tag"].strip()),
            previous=found[-1] if found else None,
        )
        found.append(block)
    return found


BLOCKS = [block for page in PAGES for block in blocks_of(page)]


def test_every_page_is_found_and_the_convention_is_used_right() -> None:
    assert len(BLOCKS) >= 80
    for block in BLOCKS:
        if block.continues:
            assert block.previous is not None, f"{block.where} continues nothing"
            assert block.previous.runs, f"{block.where} continues a block that does not run"
        if not block.runs and not block.tagged:
            reason = block.source.lstrip().splitlines()[0][len(NOT_RUN) :].strip()
            assert reason, f"{block.where}: say why it is not run"


def test_the_markers_are_read(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\n\n```python\n# continues the previous example\nx\n```\n\n"
        "```python\n# not run: an outline\n...\n```\n\n```python program-kind\ny\n```\n"
    )
    found = [(b.continues, b.runs, b.tagged, b.line) for b in blocks_of(page, root=tmp_path)]
    assert found == [
        (False, True, False, 2),
        (True, True, False, 6),
        (False, False, False, 11),
        (False, False, True, 16),
    ]


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_model_server()) as served,
    ):
        yield served


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: ModelServer) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for name, value in server.env(api_key="sk-docs-local-0123456789").items():
        monkeypatch.setenv(name, value)
    return tmp_path


def namespace_for(block: Block, namespaces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if block.continues and block.previous is not None:
        if block.previous.where not in namespaces:
            run(block.previous, namespaces)
        return namespaces[block.previous.where]
    return {"__name__": f"docs_{block.page}_{block.number}"}


def run(block: Block, namespaces: dict[str, dict[str, Any]]) -> None:
    # dont_inherit: a block runs as a reader's script would, without this module's
    # ``from __future__ import annotations`` (string annotations need a real module).
    code = compile(block.source, block.where, "exec", dont_inherit=True)
    if not block.runs:
        return
    namespace = namespace_for(block, namespaces)
    exec(code, namespace)
    namespaces[block.where] = namespace


@pytest.mark.usefixtures("scratch")
@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_block_runs(block: Block) -> None:
    run(block, {})


CLAIM = re.compile(r"(?P<names>(?:(?!\blives? in\b)[^.])*?)\blives? in `(?P<module>ptcflow[\w.]*)`")
NAME = re.compile(r"`([A-Za-z_]\w*)(?:\(\))?`")


def claims(page: Path) -> list[tuple[str, str]]:
    """``(name, module)`` for each backticked name a sentence says lives in a module."""
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: list[tuple[str, str]] = []
    for paragraph in prose.split("\n\n"):
        for match in CLAIM.finditer(" ".join(paragraph.split())):
            found += [(name, match["module"]) for name in NAME.findall(match["names"])]
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_names_live_where_the_page_says(page: Path) -> None:
    import importlib

    wrong = [
        f"{name} (not in {module})"
        for name, module in claims(page)
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not wrong, f"{page.name} says these live where they do not: {wrong}"


def test_the_claims_are_read() -> None:
    found = dict(claims(ROOT / "docs" / "runtime.md"))
    assert found["Step"] == "ptcflow.runtime" and found["ReAct"] == "ptcflow.strategies"
