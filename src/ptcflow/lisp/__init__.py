"""PTC-Lisp: the small Clojure subset models write to call tools (programmatic tool calling).

A model answers with one program; :func:`run` reads it, checks it (unbound names, unknown
tools, malformed forms: nothing runs when any is wrong), compiles it to closures and runs it in
a greenlet, suspending on each tool call while the event loop runs the tool::

    import ptcflow.lisp as lisp

    async def search(args):
        return [{"id": 1, "title": args["q"]}]

    result = await lisp.run(
        '(let [hits (call "search" {:q ctx/topic})] (return (map :id hits)))',
        ctx={"topic": "greenlets"},
        tools={"search": search},
    )
    result.value  # [1]

:func:`parse` alone gives the program's forms (:class:`Form`: :class:`Lit`, :class:`Sym`,
:class:`ListForm`, :class:`VecForm`, :class:`MapForm`, :class:`SetForm`, each with its line
and column), for tools that inspect a program without running it.

See ``docs/lisp.md`` for the language and ``docs/lisp-builtins.md`` for the builtins.
"""

from __future__ import annotations

from ptcflow.lisp._analyzer import Program as Program
from ptcflow.lisp._carry import (
    kept_functions as kept_functions,
    memory_from_data as memory_from_data,
    memory_to_data as memory_to_data,
)
from ptcflow.lisp._driver import SUSPEND as SUSPEND, ProgramSuspended as ProgramSuspended
from ptcflow.lisp._forms import (
    Form as Form,
    ListForm as ListForm,
    Lit as Lit,
    MapForm as MapForm,
    SetForm as SetForm,
    Sym as Sym,
    VecForm as VecForm,
)
from ptcflow.lisp._frontend import extract_code as extract_code
from ptcflow.lisp._runner import (
    PARSE_MAX_CHARS as PARSE_MAX_CHARS,
    LispResult as LispResult,
    ReplayMismatch as ReplayMismatch,
    ToolCallRecord as ToolCallRecord,
    ToolRouter as ToolRouter,
    analyze as analyze,
    parse as parse,
    run as run,
    run_sync as run_sync,
)
from ptcflow.lisp.errors import LimitExceeded as LimitExceeded, LispError as LispError
from ptcflow.lisp.limits import Limits as Limits
from ptcflow.lisp.printer import pr_str as pr_str
from ptcflow.lisp.values import Keyword as Keyword, from_python as from_python

__all__ = (
    "PARSE_MAX_CHARS",
    "SUSPEND",
    "Form",
    "Keyword",
    "LimitExceeded",
    "Limits",
    "LispError",
    "LispResult",
    "ListForm",
    "Lit",
    "MapForm",
    "Program",
    "ProgramSuspended",
    "ReplayMismatch",
    "SetForm",
    "Sym",
    "ToolCallRecord",
    "ToolRouter",
    "VecForm",
    "analyze",
    "extract_code",
    "from_python",
    "kept_functions",
    "memory_from_data",
    "memory_to_data",
    "parse",
    "pr_str",
    "run",
    "run_sync",
)
