"""``ptcflow serve --example``: finds the example app and serves it with uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette

from ptcflow.cli import main
from ptcflow.trace import _serve

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_is_found_from_any_directory_of_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _serve.find_example() == ROOT / "examples" / "service"


def test_serve_runs_the_example_app_with_uvicorn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[tuple[Any, str, int]] = []
    monkeypatch.setattr(
        uvicorn, "run", lambda app, host, port, **_: served.append((app, host, port))
    )
    assert main(["serve", "--example", "--port", "9123", "--latency-ms", "5"]) == 0
    ((app, host, port),) = served
    assert isinstance(app, Starlette) and (host, port) == ("127.0.0.1", 9123)
    assert app.state.service.latency == 0.005
    assert "example service on http://127.0.0.1:9123" in capsys.readouterr().out


def test_serve_says_where_the_example_lives_when_it_is_not_there(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_serve, "find_example", lambda: None)
    assert main(["serve", "--example"]) == 2
    assert "examples/service/" in capsys.readouterr().err


def test_serve_needs_the_example_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve"])
    assert "--example" in capsys.readouterr().err
