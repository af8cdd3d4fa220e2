"""Arithmetic and math builtins."""

from __future__ import annotations

import pytest

from .bi_helpers import check_error, check_value

VALUES = [
    ("(+)", "0"),
    ("(+ 1)", "1"),
    ("(+ 1 2)", "3"),
    ("(+ 1 2 3 4)", "10"),
    ("(+ 1 2.5)", "3.5"),
    ("(+ 0.1 0.2)", "0.30000000000000004"),
    ("(- 5)", "-5"),
    ("(- 10 3 2)", "5"),
    ("(- 1.5 1)", "0.5"),
    ("(*)", "1"),
    ("(* 2 3 4)", "24"),
    ("(* 2 0.5)", "1.0"),
    ("(/ 6 3)", "2.0"),
    ("(/ 1 4)", "0.25"),
    ("(/ 2)", "0.5"),
    ("(/ 60 2 3)", "10.0"),
    ("(quot 7 2)", "3"),
    ("(quot -7 2)", "-3"),
    ("(quot 7.5 2)", "3.0"),
    ("(rem 7 2)", "1"),
    ("(rem -7 2)", "-1"),
    ("(rem 7 -2)", "1"),
    ("(mod 7 2)", "1"),
    ("(mod -7 2)", "1"),
    ("(mod 7 -2)", "-1"),
    ("(mod 5.5 2)", "1.5"),
    ("(inc 1)", "2"),
    ("(inc 1.5)", "2.5"),
    ("(dec 1)", "0"),
    ("(dec -1.5)", "-2.5"),
    ("(abs -3)", "3"),
    ("(abs -3.5)", "3.5"),
    ("(abs 0)", "0"),
    ("(max 1 3 2)", "3"),
    ("(max 1 2.5)", "2.5"),
    ("(max 7)", "7"),
    ("(min 1 3 -2)", "-2"),
    ("(min 4.0 5)", "4.0"),
    ("(floor 2.7)", "2"),
    ("(floor -2.1)", "-3"),
    ("(floor 5)", "5"),
    ("(ceil 2.1)", "3"),
    ("(ceil -2.7)", "-2"),
    ("(round 2.5)", "3"),
    ("(round -2.5)", "-2"),
    ("(round 2.4)", "2"),
    ("(round 7)", "7"),
    ("(round 3.14159 2)", "3.14"),
    ("(round 2.675 2)", "2.68"),
    ("(round 1234.5 -2)", "1200.0"),
    ("(round 5 1)", "5.0"),
    ("(sqrt 16)", "4.0"),
    ("(sqrt 2.25)", "1.5"),
    ("(pow 2 10)", "1024.0"),
    ("(pow 2 -1)", "0.5"),
    ("(pow 10 400)", "##Inf"),
    ("(int 3.9)", "3"),
    ("(int -3.9)", "-3"),
    ("(int 4)", "4"),
    ("(double 3)", "3.0"),
    ("(double 2.5)", "2.5"),
    ("(long 2.5)", "2"),
    ("(float 2)", "2.0"),
    ("(+ 9223372036854775806 1)", "9223372036854775807"),
]


@pytest.mark.parametrize(("src", "expected"), VALUES)
def test_math_values(src: str, expected: str) -> None:
    check_value(src, expected)


ERRORS = [
    ('(+ 1 "a")', "type", '+ expects numbers, got string "a"'),
    ("(+ nil 1)", "type", "+ expects numbers, got nil"),
    ("(+ true 1)", "type", "+ expects numbers, got boolean true"),
    ("(- :a)", "type", "- expects numbers, got keyword :a"),
    ("(* 2 [1])", "type", "* expects numbers, got vector [1]"),
    ("(/ 1 0)", "arithmetic", "division by zero"),
    ("(/ 1 0.0)", "arithmetic", "division by zero"),
    ("(/ 0)", "arithmetic", "division by zero"),
    ("(quot 1 0)", "arithmetic", "division by zero"),
    ("(rem 1 0)", "arithmetic", "division by zero"),
    ("(mod 1 0)", "arithmetic", "division by zero"),
    ('(inc "1")', "type", "inc expects a number"),
    ("(dec nil)", "type", "dec expects a number"),
    ("(max 1 :a)", "type", "max expects numbers"),
    ('(min "a" "b")', "type", "min expects numbers"),
    ("(sqrt -1)", "arithmetic", "sqrt of a negative number"),
    ('(int "3")', "type", "use parse-long"),
    ('(double "3")', "type", "use parse-double"),
    ("(floor ##Inf)", "arithmetic", "cannot round"),
    ("(* 9223372036854775807 2)", "arithmetic", "integer overflow"),
    ("(+ 9223372036854775807 1)", "arithmetic", "integer overflow"),
    ("(inc 9223372036854775807)", "arithmetic", "integer overflow"),
    ("(reduce * (repeat 100 1000))", "arithmetic", "integer overflow"),
    ('(abs "x")', "type", "abs expects numbers"),
    ('(pow "2" 2)', "type", "pow expects numbers"),
    ("(round 1.5 1.5)", "type", "round expects an integer number of digits"),
]


@pytest.mark.parametrize(("src", "category", "fragment"), ERRORS)
def test_math_errors(src: str, category: str, fragment: str) -> None:
    check_error(src, category, fragment)
