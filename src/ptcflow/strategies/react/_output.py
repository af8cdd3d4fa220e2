"""ReAct's typed final answer (``ReAct(output_type=...)``): the prompt that asks for it,
its decoding and its check against the type.

The type travels as data: its ``module:qualname`` (imported where an answer is checked),
its JSON Schema and its compact signature, all derived once when the ReAct is built.
The checks are pure functions of the answer's text; a problem is a message for the model
(what, where, how to fix), never an exception.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from ptcflow.errors import ConfigError, UsageError
from ptcflow.signature import (
    ConversionError,
    Converter,
    SignatureError,
    format_notes,
    import_type,
    render_type,
    schema_from_hint,
    type_from_hint,
    type_path,
)

__all__ = ("OutputType", "check_answer", "describe_output", "output_prompt")

_FENCE: Final = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


class OutputType(msgspec.Struct, frozen=True, kw_only=True):
    """What a ReAct keeps of its ``output_type``: plain data, encodable.

    Attributes:
        path: the type's ``module:qualname``.
        schema: its JSON Schema.
        signature: its compact signature (``{number :string, total :float}``).
    """

    path: str
    schema: dict[str, Any]
    signature: str


def describe_output(hint: Any, where: str) -> OutputType:
    """The :class:`OutputType` of ``hint`` (a class, or the ``module:qualname`` of one).

    Raises:
        ConfigError: ``hint`` is not a class, has no JSON form, or cannot be imported.
    """
    if isinstance(hint, str):
        try:
            hint = import_type(hint)
        except UsageError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if not isinstance(hint, type):
        raise ConfigError(
            f"{where}: output_type must be a class (a dataclass, msgspec.Struct, TypedDict, "
            f"pydantic model or Enum), got {hint!r}; wrap a list or a union in a class field"
        )
    try:
        node = type_from_hint(hint)
        schema = schema_from_hint(hint)
    except SignatureError as exc:
        raise ConfigError(f"{where}: output_type: {exc.reason}") from None
    return OutputType(path=type_path(hint), schema=schema, signature=render_type(node, "prompt"))


def output_prompt(output: OutputType) -> str:
    """The system prompt's section that asks for the final answer as JSON of the type."""
    name = output.path.rpartition(":")[2]
    lines = [
        "## Final answer",
        "Call the tools you need. When you are done, answer with one JSON value of type "
        f"{name}, and nothing else (no prose, no tool call):",
        output.signature,
    ]
    notes = format_notes(output.schema)
    if notes:
        lines += [f"- {note}" for note in notes]
    lines += ["JSON Schema:", msgspec.json.encode(output.schema).decode()]
    return "\n".join(lines)


def check_answer(output: OutputType, text: str) -> tuple[Any, str | None]:
    """The plain value of a final answer ``text``, or the problem to tell the model.

    The answer is JSON (a ```json fence is accepted) that the type can be built from (its
    field types, formats, enum values, a pydantic model's validators). A type that cannot
    be imported here is a problem too (``import``), not an exception.

    Returns:
        ``(value, None)`` when the answer fits, else ``(None, problem)``.
    """
    name = output.path.rpartition(":")[2]
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        return None, (
            f"Your final answer is not valid JSON ({exc}). Answer with only one JSON value of "
            f"type {name}: {output.signature}"
        )
    try:
        Converter(import_type(output.path)).load(value)
    except ConversionError as exc:
        return None, (
            f"Your final answer does not fit {name}:\n- {exc}\n"
            f"Fix it and answer again with only the JSON value ({output.signature})."
        )
    return value, None
