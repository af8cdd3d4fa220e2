"""The SubAgent system prompt: short rules, a sized reference, tools, data, output.

The static part (everything but the data inventory) depends only on the agent definition;
:func:`static_prompt` builds it once and the agent caches it. :func:`data_inventory`
describes the ``ctx/`` of one run (types in signature syntax, a truncated sample,
firewalled fields hidden). The builtins listed come from the builtin registry itself, so
their one-line usage always matches the interpreter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from ptcflow.lisp.builtins import BUILTINS
from ptcflow.signals import ToolSpec
from ptcflow.signature import Fields, ListOf, Prim, Signature, Type, render_type
from ptcflow.strategies.ptc._preview import infer_type, preview

__all__ = (
    "ToolInfo",
    "data_inventory",
    "example_call",
    "static_prompt",
    "tool_info_from_spec",
)

KEY_BUILTINS: Final = (
    "map", "filter", "remove", "reduce", "first", "last", "count", "take", "sort-by",
    "group-by", "frequencies", "distinct", "into", "conj", "get", "get-in", "assoc", "update",
    "select-keys", "keys", "vals", "merge", "some", "every?", "range", "str", "format",
    "println", "where", "sum-by", "avg-by", "max-by", "min-by", "pluck", "round", "parse-int",
    "extract", "str/join", "str/split", "str/includes?", "str/lower-case",
)  # fmt: skip
"""The builtins the prompt lists (the ones models reach for in data work)."""

_JAVA: Final = tuple(sorted(n for n in BUILTINS if n.startswith((".", "Math/", "Integer/"))))
"""The Java methods and statics that work (a whitelist bound to builtins), as listed."""

_RULES = """\
You solve the task by writing PTC-Lisp programs, a small Clojure subset that runs in a \
sandbox. Each response is one program; its result comes back to you as the next message. \
You have {turns}.

## Rules
- Answer with exactly one ```clojure block; text outside it is ignored.
- Call tools with one map of named arguments: (call "tool-name" {{:arg value}}).
{finish}
- Read the input as ctx/<key> (read-only). Values persist across turns with (def name value), \
(defn name [args] ...) and (memory/put :key value); read them back by name or as memory/key.
- You see only what the program returns and prints: print the few fields you need, not \
whole datasets.
- When a program fails, the error (with its line and column) comes back to you and is \
available as ctx/fail in the next program: fix the program and try again.

## PTC-Lisp
Forms: def defn fn #(...) let if when cond case do loop/recur for doseq -> ->> some-> \
and or not. Keywords and maps are functions: (:id m), (map :id rows). Strings use double \
quotes.
Maps from ctx/ and from tools have keyword keys, found however you spell them: \
(:user_id r), (:user-id r) and (get r "user_id") all read user_id.
Java: only {java}, e.g. (.indexOf s "42") or (Math/sqrt 16). \
No other interop, no quote, no atoms, no try/catch.
Functions (one per line: usage -- meaning):
{builtins}
(pmap f coll) runs f on the items concurrently (use it for many independent tool calls)."""

_AGENT_FINISH = """\
- End the task with (return value) when you have the answer, or \
(fail {:reason :keyword :message "why"}) when it cannot be done. A program without \
return is a step: its value is shown to you and the task continues."""

_JUDGMENT_FINISH = """\
- The value of your program's last expression is the answer (or use (return value)); \
you have one turn, so compute it in one program."""

_FORMAT = """\
## Output format
Exactly one block, for example:
```clojure
{example}
```"""


class ToolInfo(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One tool as the prompt shows it.

    Attributes:
        name: the tool's name.
        signature: its signature line, ``search(query :string) -> [{id :int}]``.
        description: what it does.
        example: one example call, ``(call "search" {:query "..."})``.
    """

    name: str
    signature: str
    description: str = ""
    example: str = ""


def static_prompt(
    *,
    tools: Sequence[ToolInfo],
    catalog: Sequence[ToolInfo] = (),
    signature: Signature | None = None,
    max_turns: int,
    judgment: bool,
    output_notes: Sequence[str] = (),
) -> tuple[str, str]:
    """The system prompt around the data inventory: ``(before, after)``.

    Args:
        tools: the tools the agent may call.
        catalog: tools shown for planning only ("do not call").
        signature: the agent's signature (its output is the expected ``return``).
        max_turns: the turn budget.
        judgment: one turn, no tools: the program's value is the answer.
        output_notes: lines on the output's fields the signature cannot say (a date's
            format, an enum's values), from ``SubAgent(output_type=...)``.

    Returns:
        The text before the data inventory and the text after it.
    """
    turns = "one turn" if max_turns == 1 else f"up to {max_turns} turns"
    head = _RULES.format(
        turns=turns,
        finish=_JUDGMENT_FINISH if judgment else _AGENT_FINISH,
        builtins=_builtin_lines(),
        java=" ".join(_JAVA),
    )
    output = signature.output if signature is not None else Prim(name="any")
    parts = [_tools_section(tools, output, judgment)]
    if catalog:
        parts.append(_catalog_section(catalog))
    parts.append(_expected_section(output, judgment, output_notes))
    parts.append(_FORMAT.format(example=_example_program(tools, output, judgment)))
    return head, "\n\n".join(parts)


def _builtin_lines() -> str:
    lines = []
    for name in KEY_BUILTINS:
        b = BUILTINS.get(name)
        if b is not None:
            lines.append(f"{b.signature} -- {_first_clause(b.doc)}")
    return "\n".join(lines)


def _first_clause(doc: str) -> str:
    """The doc line up to its first top-level ``; `` (the rest is detail)."""
    depth = 0
    for i, ch in enumerate(doc):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and doc.startswith("; ", i):
            return doc[:i]
    return doc.rstrip(" .")


def _tools_section(tools: Sequence[ToolInfo], output: Type, judgment: bool) -> str:
    lines = ["## Tools you can call"]
    for info in tools:
        lines.append(f"- {info.signature}")
        lines.extend(f"  {line}" for line in info.description.splitlines() if line.strip())
        if info.example:
            lines.append(f"  Example: {info.example}")
    if judgment:
        if not tools:
            lines.append("- none: compute the answer from ctx/ in one program.")
        return "\n".join(lines)
    out = render_type(output, "prompt")
    lines.append(f"- return(data {out}) -> :exit-success")
    lines.append("  Ends the task successfully with data (it must match the expected output).")
    lines.append(f'  Example: (call "return" {example_value(output)})')
    lines.append(
        "- fail(error {reason :keyword, message :string, op :string?, details :map?}) "
        "-> :exit-error"
    )
    lines.append("  Ends the task as failed, saying why.")
    lines.append('  Example: (call "fail" {:reason :not_found :message "No such user"})')
    return "\n".join(lines)


def _catalog_section(catalog: Sequence[ToolInfo]) -> str:
    lines = ["## Tools for planning (do not call)"]
    for info in catalog:
        lines.append(f"- {info.signature}")
        lines.extend(f"  {line}" for line in info.description.splitlines() if line.strip())
    return "\n".join(lines)


def _expected_section(output: Type, judgment: bool, notes: Sequence[str] = ()) -> str:
    shown = render_type(output, "prompt")
    extra = "".join(f"\n{note}" for note in notes)
    if judgment:
        return f"## Expected output\nThe program's value: {shown}{extra}"
    return (
        f"## Expected output\n{shown}{extra}\nReturn it with (return {example_value(output)}); "
        "fields whose name starts with _ are passed on but never shown to you."
    )


def _example_program(tools: Sequence[ToolInfo], output: Type, judgment: bool) -> str:
    value = example_value(output)
    if judgment:
        return value if not tools else f"(let [x {tools[0].example}]\n  {value})"
    if tools:
        return f"(let [result {tools[0].example}]\n  (println (count result))\n  (return {value}))"
    return f"(return {value})"


def example_value(node: Type, depth: int = 0) -> str:
    """A small PTC-Lisp value of type ``node`` (for example calls and returns).

    Example:
        >>> from ptcflow.signature import parse_type
        >>> example_value(parse_type("{count :int, tags [:string]}"))
        '{:count 1 :tags ["..."]}'
    """
    if isinstance(node, Prim):
        return _PRIM_EXAMPLES.get(node.name, "nil")
    if isinstance(node, ListOf):
        return "[" + example_value(node.item, depth + 1) + "]"
    if isinstance(node, Fields):
        if depth > 3 or not node.fields:
            return "{}"
        inner = " ".join(f":{f.name} {example_value(f.type, depth + 1)}" for f in node.fields)
        return "{" + inner + "}"
    return "nil"


_PRIM_EXAMPLES: Final = {
    "string": '"..."',
    "int": "1",
    "float": "1.5",
    "bool": "true",
    "keyword": ":value",
    "any": '"..."',
    "map": "{}",
}


def example_call(name: str, signature: Signature | None) -> str:
    """One example call of a tool, arguments by name: ``(call "search" {:query "..."})``.

    Example:
        >>> from ptcflow.signature import parse
        >>> example_call("get_user", parse("(id :int, verbose :bool?) -> :map"))
        '(call "get_user" {:id 1})'
    """
    if signature is None or not signature.params:
        return f'(call "{name}" {{}})'
    required = [p for p in signature.params if not p.optional] or list(signature.params[:1])
    args = " ".join(f":{p.name} {example_value(p.type, 1)}" for p in required)
    return f'(call "{name}" {{{args}}})'


def tool_info_from_spec(spec: ToolSpec) -> ToolInfo:
    """A :class:`ToolInfo` from a ToolSpec (name, description and JSON Schema only)."""
    props = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", ()))
    params = []
    example = []
    if isinstance(props, Mapping):
        for pname, schema in props.items():
            kind = _schema_type(schema)
            optional = "" if pname in required else "?"
            params.append(f"{pname} {kind}{optional}")
            if pname in required:
                example.append(f":{pname} {_PRIM_EXAMPLES.get(kind.lstrip(':'), 'nil')}")
    sig = f"{spec.name}({', '.join(params)}) -> :any"
    return ToolInfo(
        name=spec.name,
        signature=sig,
        description=spec.description,
        example=f'(call "{spec.name}" {{{" ".join(example)}}})',
    )


def _schema_type(schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return {
        "string": ":string",
        "integer": ":int",
        "number": ":float",
        "boolean": ":bool",
        "object": ":map",
        "array": "[:any]",
    }.get(str(kind), ":any")


def data_inventory(
    ctx: Mapping[str, Any],
    *,
    types: Mapping[str, str],
    sample_chars: int,
) -> str:
    """The ``## Data`` section: each ``ctx/`` key with its type and a truncated sample.

    Args:
        ctx: the run's context.
        types: declared types by key (from the agent's or the context's signature), as
            the prompt shows them (``render_type(t, "prompt")``, rendered once per
            strategy); other keys get a type inferred from their value.
        sample_chars: the longest sample shown.

    Example:
        >>> print(data_inventory({"user": "ada", "_ids": [1]}, types={}, sample_chars=40))
        ## Data (read with ctx/<key>)
        - ctx/user :string = "ada"
        - ctx/_ids <Firewalled> (use it in programs; its value is not shown)
    """
    if not ctx:
        return "## Data (read with ctx/<key>)\nNo data: the context is empty."
    lines = ["## Data (read with ctx/<key>)"]
    for key, value in ctx.items():
        if key.startswith("_"):
            lines.append(f"- ctx/{key} <Firewalled> (use it in programs; its value is not shown)")
            continue
        declared = types.get(key)
        kind = declared if declared is not None else infer_type(value)
        sample, _ = preview(value, sample_chars)
        size = ""
        if isinstance(value, list | tuple):
            size = f" ({len(value)} item{'' if len(value) == 1 else 's'})"
        lines.append(f"- ctx/{key} {kind}{size} = {sample}")
    return "\n".join(lines)
