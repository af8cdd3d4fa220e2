"""Small edges a newcomer hits: names the docs use, what objects print, plural counts."""

from __future__ import annotations

import ptcflow.lisp as lisp
from ptcflow.demo._run import _count


def test_lisp_program_is_exported() -> None:
    program = lisp.analyze('(call "search" {:q "x"})', tool_names=["search"])
    assert isinstance(program, lisp.Program)
    assert "Program" in lisp.__all__


def test_limits_print_their_values() -> None:
    text = repr(lisp.Limits())
    assert text.startswith("Limits(timeout_ms=5000, max_steps=1000000, ")
    assert "max_tool_calls=50" in repr(lisp.Limits(max_tool_calls=50))


def test_counts_read_as_english() -> None:
    assert _count(1, "tool call") == "1 tool call"
    assert _count(0, "tool call") == "0 tool calls"
    assert _count(1200, "model call") == "1,200 model calls"
