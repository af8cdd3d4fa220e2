"""The signature language: typed contracts between agents and tools.

A signature names the inputs a tool or agent takes and the output it gives, in a compact
text form made for LLM prompts::

    (query :string, limit :int?) -> [{id :int, title :string}]

Parse it once with :func:`parse`, then validate inputs (leniently coerced) and outputs
(strict), render it back for prompts, or export JSON Schema. :func:`signature_from_callable`
infers a signature from Python type hints; :class:`Template` expands ``{{placeholders}}``
and :func:`check_placeholders` checks them against a signature.

Example:
    >>> from ptcflow.signature import parse
    >>> sig = parse("(id :int) -> {name :string, email :string?}")
    >>> sig.validate_input({"id": "7"}).warnings
    ['id: coerced string "7" to int']
    >>> sig.validate_output({"name": 3}).errors
    ['name: expected string, got int 3']
"""

from __future__ import annotations

from ptcflow.signature._ast import (
    Field as Field,
    Fields as Fields,
    ListOf as ListOf,
    Param as Param,
    Prim as Prim,
    Type as Type,
)
from ptcflow.signature._errors import (
    SignatureError as SignatureError,
    SignatureWarning as SignatureWarning,
)
from ptcflow.signature._firewall import redact_firewalled as redact_firewalled
from ptcflow.signature._hints import (
    schema_from_hint as schema_from_hint,
    signature_from_callable as signature_from_callable,
    type_from_hint as type_from_hint,
)
from ptcflow.signature._parser import parse as parse, parse_type as parse_type
from ptcflow.signature._pytypes import (
    ConversionError as ConversionError,
    Converter as Converter,
    format_notes as format_notes,
    import_type as import_type,
    is_record as is_record,
    needs_conversion as needs_conversion,
    to_plain as to_plain,
    type_path as type_path,
)
from ptcflow.signature._render import render_type as render_type
from ptcflow.signature._signature import (
    Signature as Signature,
    validate_return as validate_return,
)
from ptcflow.signature._template import (
    Template as Template,
    check_placeholders as check_placeholders,
)
from ptcflow.signature._validate import MODES as MODES, ValidationResult as ValidationResult

__all__ = (
    "MODES",
    "ConversionError",
    "Converter",
    "Field",
    "Fields",
    "ListOf",
    "Param",
    "Prim",
    "Signature",
    "SignatureError",
    "SignatureWarning",
    "Template",
    "Type",
    "ValidationResult",
    "check_placeholders",
    "format_notes",
    "import_type",
    "is_record",
    "needs_conversion",
    "parse",
    "parse_type",
    "redact_firewalled",
    "render_type",
    "schema_from_hint",
    "signature_from_callable",
    "to_plain",
    "type_from_hint",
    "type_path",
    "validate_return",
)
