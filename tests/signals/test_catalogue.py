"""The signal type catalogue and the data struct of every type."""

from __future__ import annotations

import pytest

import ptcflow.signals as signals
from ptcflow.signals import (
    DATA_TYPES,
    EMBED_RESULT,
    LLM_DELTA,
    LLM_RESPONSE,
    PROGRAM_PRINT,
    PROGRAM_RESULT,
    REQUEST_COMPLETED,
    REQUEST_ERROR,
    REQUEST_FAILED,
    REQUEST_STARTED,
    SIGNAL_TYPES,
    TERMINAL_TYPES,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
)

CATALOGUE = {
    "LLM_DELTA": "ai.llm.delta",
    "LLM_RESPONSE": "ai.llm.response",
    "USAGE": "ai.usage",
    "EMBED_RESULT": "ai.embed.result",
    "TOOL_STARTED": "ai.tool.started",
    "TOOL_RESULT": "ai.tool.result",
    "REQUEST_STARTED": "ai.request.started",
    "REQUEST_COMPLETED": "ai.request.completed",
    "REQUEST_FAILED": "ai.request.failed",
    "REQUEST_ERROR": "ai.request.error",
    "PROGRAM_PRINT": "ai.program.print",
    "PROGRAM_RESULT": "ai.program.result",
    "APPROVAL_REQUESTED": "ai.approval.requested",
    "APPROVAL_RESOLVED": "ai.approval.resolved",
    "REQUEST_PAUSED": "ai.request.paused",
    "REQUEST_RESUMED": "ai.request.resumed",
    "HANDOFF": "ai.handoff",
}


@pytest.mark.parametrize(("name", "value"), sorted(CATALOGUE.items()))
def test_every_catalogue_constant(name: str, value: str) -> None:
    assert getattr(signals, name) == value
    assert value in SIGNAL_TYPES


def test_signal_types_is_exactly_the_catalogue() -> None:
    assert frozenset(CATALOGUE.values()) == SIGNAL_TYPES


def test_terminal_types() -> None:
    assert (
        frozenset({LLM_RESPONSE, EMBED_RESULT, TOOL_RESULT, REQUEST_ERROR, PROGRAM_RESULT})
        == TERMINAL_TYPES
    )
    assert TERMINAL_TYPES < SIGNAL_TYPES
    for not_terminal in (LLM_DELTA, USAGE, TOOL_STARTED, REQUEST_STARTED, PROGRAM_PRINT):
        assert not_terminal not in TERMINAL_TYPES


def test_every_type_has_a_data_struct() -> None:
    assert set(DATA_TYPES) == SIGNAL_TYPES
    assert DATA_TYPES[REQUEST_COMPLETED] is DATA_TYPES[REQUEST_FAILED]
    for struct in DATA_TYPES.values():
        assert struct.__struct_config__.frozen
        assert struct.__doc__
