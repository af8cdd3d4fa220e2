"""``ptcflow.tools.from_mcp_server`` moved to ``ptcflow.mcp``: the old spelling still works for
one release, with a DeprecationWarning that names the new one."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import ptcflow.mcp
import ptcflow.tools

NEW_SPELLING = r"use ptcflow\.mcp\.from_mcp_server instead"


def test_the_old_spelling_warns_and_gives_the_mcp_function() -> None:
    with pytest.warns(DeprecationWarning, match=NEW_SPELLING):
        old = getattr(ptcflow.tools, "from_mcp_server")  # noqa: B009 - the module __getattr__
    assert old is ptcflow.mcp.from_mcp_server


def test_from_import_of_the_old_spelling_warns_and_still_builds_a_source() -> None:
    namespace: dict[str, Any] = {}
    code = compile("from ptcflow.tools import from_mcp_server as old", "caller.py", "exec")
    with pytest.warns(DeprecationWarning, match=NEW_SPELLING) as caught:
        exec(code, namespace)
    # The warning points at the importing line, not at ptcflow or at importlib.
    assert {w.filename for w in caught} == {"caller.py"}
    source = namespace["old"]("http://127.0.0.1:9/mcp", prefix="geo_")
    assert isinstance(source, ptcflow.mcp.MCPToolSource)


def test_the_old_spelling_is_not_exported_and_other_names_still_fail() -> None:
    assert "from_mcp_server" not in ptcflow.tools.__all__
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(ptcflow.tools, "no_such_name")  # noqa: B009
    assert not hasattr(ptcflow.tools, "no_such_name")
    # A star import reads only __all__, so it does not warn.
    exec("from ptcflow.tools import *", {})


def test_importing_tools_does_not_import_mcp() -> None:
    """``tools`` is a leaf: the package built on it is loaded only for the old spelling."""
    code = (
        "import sys, ptcflow.tools\n"
        "assert 'ptcflow.mcp' not in sys.modules, sorted(m for m in sys.modules if 'mcp' in m)\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=60)
