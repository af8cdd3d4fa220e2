"""The examples in docs/runtime.md and docs/telemetry.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("page", ["runtime.md", "telemetry.md"])
def test_examples_run(page: str) -> None:
    blocks = BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no python examples"
    namespace: dict[str, object] = {"__name__": f"docs_{page.replace('.', '_')}"}
    for number, source in enumerate(blocks, 1):
        code = compile(source, f"{page} example {number}", "exec")
        exec(code, namespace)
