"""Predicates: type checks, number tests, emptiness and membership, and ``type``."""

from __future__ import annotations

import math
from typing import Any

from ptcflow.lisp._colls import Map, Vector, host_get, mkey
from ptcflow.lisp.builtins._registry import Registry, integer, num
from ptcflow.lisp.errors import type_error
from ptcflow.lisp.values import Keyword, LispFn, Regex

REGISTRY = Registry("predicates", "Predicates")
add = REGISTRY.add


@add("nil?", "(nil? x)", "True when x is nil.")
def is_nil(x: Any) -> bool:
    return x is None


@add("some?", "(some? x)", "True when x is not nil.")
def is_some(x: Any) -> bool:
    return x is not None


@add("number?", "(number? x)", "True for integers and floats.")
def is_number(x: Any) -> bool:
    t = type(x)
    return t is int or t is float


@add("int?", "(int? x)", "True for integers.", aliases=("integer?",))
def is_int(x: Any) -> bool:
    return type(x) is int


@add("float?", "(float? x)", "True for floats.", aliases=("double?",))
def is_float(x: Any) -> bool:
    return type(x) is float


@add("string?", "(string? x)", "True for strings.")
def is_string(x: Any) -> bool:
    return type(x) is str


@add("keyword?", "(keyword? x)", "True for keywords.")
def is_keyword(x: Any) -> bool:
    return type(x) is Keyword


@add("map?", "(map? x)", "True for maps.")
def is_map(x: Any) -> bool:
    t = type(x)
    return t is Map or t is dict


@add(
    "vector?",
    "(vector? x)",
    "True for vectors and sequences (both are vectors here).",
    aliases=("seq?", "sequential?", "list?"),
)
def is_vector(x: Any) -> bool:
    return type(x) is Vector


@add("set?", "(set? x)", "True for sets.")
def is_set(x: Any) -> bool:
    return type(x) is frozenset


@add("coll?", "(coll? x)", "True for vectors, maps and sets.")
def is_coll(x: Any) -> bool:
    t = type(x)
    return t is Vector or t is dict or t is frozenset or t is Map


@add("fn?", "(fn? x)", "True for functions (not for keywords or maps used as functions).")
def is_fn(x: Any) -> bool:
    return callable(x) and type(x) is not Keyword


@add("boolean?", "(boolean? x)", "True for true and false.")
def is_boolean(x: Any) -> bool:
    return type(x) is bool


@add("true?", "(true? x)", "True when x is exactly true.")
def is_true(x: Any) -> bool:
    return x is True


@add("false?", "(false? x)", "True when x is exactly false.")
def is_false(x: Any) -> bool:
    return x is False


@add("empty?", "(empty? coll)", "True when coll is nil or has no elements.")
def is_empty(coll: Any) -> bool:
    if coll is None:
        return True
    t = type(coll)
    if t is Vector or t is str or t is dict or t is frozenset or t is Map:
        return not coll
    raise type_error("empty?", "a collection or string", coll)


@add("even?", "(even? n)", "True when the integer n is even.")
def is_even(n: Any) -> bool:
    return integer("even?", n) % 2 == 0


@add("odd?", "(odd? n)", "True when the integer n is odd.")
def is_odd(n: Any) -> bool:
    return integer("odd?", n) % 2 == 1


@add("pos?", "(pos? x)", "True when x > 0.")
def is_pos(x: Any) -> bool:
    return num("pos?", x) > 0


@add("neg?", "(neg? x)", "True when x < 0.")
def is_neg(x: Any) -> bool:
    return num("neg?", x) < 0


@add("zero?", "(zero? x)", "True when x is 0 or 0.0.")
def is_zero(x: Any) -> bool:
    return num("zero?", x) == 0


@add("pos-int?", "(pos-int? x)", "True for integers > 0.")
def is_pos_int(x: Any) -> bool:
    return type(x) is int and x > 0


@add("neg-int?", "(neg-int? x)", "True for integers < 0.")
def is_neg_int(x: Any) -> bool:
    return type(x) is int and x < 0


@add("nat-int?", "(nat-int? x)", "True for integers >= 0.")
def is_nat_int(x: Any) -> bool:
    return type(x) is int and x >= 0


@add(
    "contains?",
    "(contains? coll k)",
    "True when the map has key k, the set has member k, or k is a valid index of the vector.",
)
def contains(coll: Any, k: Any) -> bool:
    t = type(coll)
    if t is Map or t is frozenset:
        return mkey(k) in coll
    if t is dict:
        return host_get(coll, k, _ABSENT) is not _ABSENT
    if coll is None:
        return False
    if t is Vector or t is str:
        return type(k) is int and 0 <= k < len(coll)
    raise type_error("contains?", "a map, set, vector or string", coll)


_ABSENT = object()


@add("distinct?", "(distinct? x & ys)", "True when no two arguments are equal.")
def is_distinct(x: Any, *ys: Any) -> bool:
    seen = set()
    for v in (x, *ys):
        key = mkey(v)
        if key in seen:
            return False
        seen.add(key)
    return True


@add("any?", "(any? x)", "Always true.")
def is_any(x: Any) -> bool:
    return True


@add("regex?", "(regex? x)", 'True for regex values such as #"\\d+".')
def is_regex(x: Any) -> bool:
    return type(x) is Regex


_TYPES = {
    type(None): Keyword("nil"),
    bool: Keyword("boolean"),
    int: Keyword("int"),
    float: Keyword("float"),
    str: Keyword("string"),
    Keyword: Keyword("keyword"),
    Vector: Keyword("vector"),
    dict: Keyword("map"),
    Map: Keyword("map"),
    frozenset: Keyword("set"),
    Regex: Keyword("regex"),
}


@add(
    "type",
    "(type x)",
    "The type of x as a keyword: :nil :boolean :int :float :string :keyword :vector :map "
    ":set :regex :fn.",
)
def type_of(x: Any) -> Keyword:
    k = _TYPES.get(type(x))
    if k is not None:
        return k
    if callable(x) or isinstance(x, LispFn):
        return Keyword("fn")
    return Keyword(type(x).__name__)


@add("char?", "(char? x)", "True for a one-character string (characters are strings here).")
def is_char(x: Any) -> bool:
    return type(x) is str and len(x) == 1


@add("symbol?", "(symbol? x)", "Always false: programs have no symbol values (no quote).")
def is_symbol(x: Any) -> bool:
    return False


@add("infinite?", "(infinite? x)", "True for ##Inf and ##-Inf.")
def is_infinite(x: Any) -> bool:
    return type(num("infinite?", x)) is float and x in (math.inf, -math.inf)


@add("NaN?", "(NaN? x)", "True for ##NaN.")
def is_nan(x: Any) -> bool:
    return type(num("NaN?", x)) is float and x != x


@add("counted?", "(counted? x)", "True for collections (their count is known at once).")
def is_counted(x: Any) -> bool:
    t = type(x)
    return t is Vector or t is dict or t is Map or t is frozenset


@add("indexed?", "(indexed? x)", "True for vectors.", aliases=("reversible?",))
def is_indexed(x: Any) -> bool:
    return type(x) is Vector


@add("seqable?", "(seqable? x)", "True for nil, strings and collections.")
def is_seqable(x: Any) -> bool:
    t = type(x)
    return x is None or t is str or t is Vector or t is dict or t is Map or t is frozenset
