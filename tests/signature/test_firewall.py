"""Redacting firewalled fields from data shown to models."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.errors import UsageError
from ptcflow.signature import redact_firewalled


class Keyword:
    def __init__(self, name: str) -> None:
        self.name = name


def test_prompt_view_masks_and_parent_view_drops() -> None:
    data = {"summary": "3 mails", "_raw_data": [{"a": 1}]}
    assert redact_firewalled(data) == {"summary": "3 mails", "_raw_data": "<Firewalled>"}
    assert redact_firewalled(data, view="parent") == {"summary": "3 mails"}
    assert redact_firewalled(data, view="full") is data
    assert data == {"summary": "3 mails", "_raw_data": [{"a": 1}]}


def test_nested_and_keyword_keys() -> None:
    kw = Keyword("_secret")
    data: Any = {"items": [{"id": 1, kw: "x"}, ({":_t": 2, "ok": True},)]}
    assert redact_firewalled(data, view="parent") == {"items": [{"id": 1}, ({"ok": True},)]}


def test_unchanged_containers_are_shared() -> None:
    data = {"a": [1, {"b": 2}], "c": (3,)}
    assert redact_firewalled(data) is data


def test_unknown_view() -> None:
    with pytest.raises(UsageError):
        redact_firewalled({}, view="nope")  # type: ignore[arg-type]
