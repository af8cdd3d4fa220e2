"""String builtins, format, and regexes (RE2: what it refuses, and the Java spellings)."""

from __future__ import annotations

import pytest

from ptcflow.lisp import run_sync
from ptcflow.lisp.limits import Limits

from .bi_helpers import check_error, check_value

STRINGS = [
    ('(str "a" 1 :k nil 1.5 true)', '"a1:k1.5true"'),
    ("(str)", '""'),
    ("(str nil)", '""'),
    ('(str "x")', '"x"'),
    ('(str [1 "a"] {:a 1})', '"[1 \\"a\\"]{:a 1}"'),
    ("(str #{})", '"#{}"'),
    ('(subs "hello" 1)', '"ello"'),
    ('(subs "hello" 1 3)', '"el"'),
    ('(subs "hi" 2)', '""'),
    ('(join ", " [1 2 3])', '"1, 2, 3"'),
    ("(join [1 2])", '"12"'),
    ('(join "-" nil)', '""'),
    ('(join "," [nil "a" :b])', '",a,:b"'),
    ('(str/join "|" ["a" "b"])', '"a|b"'),
    ('(clojure.string/join ["a" "b"])', '"ab"'),
    ('(split "a,b,c" ",")', '["a" "b" "c"]'),
    ('(split "a1b22c" #"\\d+")', '["a" "b" "c"]'),
    ('(split "a,b,,c,," #",")', '["a" "b" "" "c"]'),
    ('(split "a b c" #" " 2)', '["a" "b c"]'),
    ('(split "" #",")', '[""]'),
    ('(split "abc" #"")', '["a" "b" "c"]'),
    ('(split ",a" #",")', '["" "a"]'),
    ('(str/split "x=1" #"=")', '["x" "1"]'),
    ('(split-lines "a\\nb\\r\\nc\\n")', '["a" "b" "c"]'),
    ('(str/split-lines "one")', '["one"]'),
    ('(trim "  a b  ")', '"a b"'),
    ('(str/trim "\\n x \\t")', '"x"'),
    ('(triml "  a ")', '"a "'),
    ('(trimr "  a ")', '"  a"'),
    ('(trim-newline "a\\n\\n")', '"a"'),
    ('(upper-case "abc")', '"ABC"'),
    ('(str/lower-case "AbC")', '"abc"'),
    ('(lower-case "ÀB")', '"àb"'),
    ('(capitalize "hELLO")', '"Hello"'),
    ('(capitalize "")', '""'),
    ('(blank? "  ")', "true"),
    ("(blank? nil)", "true"),
    ('(blank? " a ")', "false"),
    ('(starts-with? "hello" "he")', "true"),
    ('(str/starts-with? "hello" "lo")', "false"),
    ('(ends-with? "hello" "lo")', "true"),
    ('(includes? "hello" "ell")', "true"),
    ('(str/includes? "hello" "xyz")', "false"),
    ('(index-of "abcabc" "c")', "2"),
    ('(index-of "abcabc" "c" 3)', "5"),
    ('(index-of "abc" "z")', "nil"),
    ('(last-index-of "abcabc" "b")', "4"),
    ('(last-index-of "abcabc" "b" 3)', "1"),
    ('(last-index-of "abc" "z")', "nil"),
    ('(replace "a-b-c" "-" "+")', '"a+b+c"'),
    ('(replace "a1b22" #"\\d+" "#")', '"a#b#"'),
    ('(replace "john smith" #"(\\w+) (\\w+)" "$2, $1")', '"smith, john"'),
    ('(replace "cost: 5" #"\\d" "\\\\$")', '"cost: $"'),
    ('(replace "a1b2" #"\\d" (fn [d] (str "<" d ">")))', '"a<1>b<2>"'),
    ('(replace "x" #"y" "z")', '"x"'),
    ("(replace {:a 1} [:a :b])", "[1 :b]"),
    ('(str/replace "aaa" "a" "b")', '"bbb"'),
    ('(replace-first "a-b-c" "-" "+")', '"a+b-c"'),
    ('(str/replace-first "a1b2" #"\\d" "#")', '"a#b2"'),
    ('(str/reverse "abc")', '"cba"'),
    ('(clojure.string/reverse "")', '""'),
    ("(name :a)", '"a"'),
    ("(name :user/id)", '"id"'),
    ('(name "s")', '"s"'),
    ("(namespace :user/id)", '"user"'),
    ("(namespace :id)", "nil"),
    ('(keyword "a")', ":a"),
    ('(keyword "user" "id")', ":user/id"),
    ("(keyword :a)", ":a"),
    ("(keyword nil)", "nil"),
    ('(parse-long "42")', "42"),
    ('(parse-long "-7")', "-7"),
    ('(parse-long "4.2")', "nil"),
    ('(parse-long "abc")', "nil"),
    ('(parse-long "")', "nil"),
    ('(parse-long "99999999999999999999")', "nil"),
    ('(parse-double "4.5")', "4.5"),
    ('(parse-double "1e3")', "1000.0"),
    ('(parse-double "-.5")', "-0.5"),
    ('(parse-double "7")', "7.0"),
    ('(parse-double "x1")', "nil"),
    ('(parse-double "Infinity")', "##Inf"),
]


@pytest.mark.parametrize(("src", "expected"), STRINGS)
def test_strings(src: str, expected: str) -> None:
    check_value(src, expected)


FORMAT = [
    ('(format "%s and %s" "a" :b)', '"a and :b"'),
    ('(format "%d items" 3)', '"3 items"'),
    ('(format "%.2f" 3.14159)', '"3.14"'),
    ('(format "%.2f" 2)', '"2.00"'),
    ('(format "%f" 1.5)', '"1.500000"'),
    ('(format "%5d|%-5d|%05d" 42 42 42)', '"   42|42   |00042"'),
    ('(format "%x %X" 255 255)', '"ff FF"'),
    ('(format "100%%")', '"100%"'),
    ('(format "%,d" 1234567)', '"1,234,567"'),
    ('(format "%+d" 5)', '"+5"'),
    ('(format "%s" nil)', '"nil"'),
    ('(format "%s" [1 2])', '"[1 2]"'),
    ('(format "%.3s" "abcdef")', '"abc"'),
    ('(format "%2$s %1$s" "a" "b")', '"b a"'),
    ('(format "%b %b" nil 0)', '"false true"'),
    ('(format "a%nb")', '"a\\nb"'),
    ('(format "%e" 12345.678)', '"1.234568e+04"'),
    ('(format "{0} {x}" 1)', '"{0} {x}"'),
    ('(format "%s" "{0.__class__}")', '"{0.__class__}"'),
    ('(format "%.2f" 2.675)', '"2.68"'),
    ('(format "%.0f" 2.5)', '"3"'),
    ('(format "%.2f" 0.125)', '"0.13"'),
    ('(format "%08.2f" -3.14159)', '"-0003.14"'),
    ('(format "%,.2f" 1234567.891)', '"1,234,567.89"'),
    ('(format "%.1f|%5.1f" ##Inf ##NaN)', '"Infinity|  NaN"'),
    ('(format "%.2f" 1e30)', '"1000000000000000000000000000000.00"'),
]


@pytest.mark.parametrize(("src", "expected"), FORMAT)
def test_format(src: str, expected: str) -> None:
    check_value(src, expected)


REGEX = [
    ('(re-find #"\\d+" "ab123cd45")', '"123"'),
    ('(re-find #"(\\w)(\\d)" "x a1")', '["a1" "a" "1"]'),
    ('(re-find #"(a)|(b)" "b")', '["b" nil "b"]'),
    ('(re-find #"z" "abc")', "nil"),
    ('(re-find "\\\\d" "a1")', '"1"'),
    ('(re-matches #"\\d+" "123")', '"123"'),
    ('(re-matches #"\\d+" "123a")', "nil"),
    ('(re-matches #"(\\d+)-(\\d+)" "10-20")', '["10-20" "10" "20"]'),
    ('(re-seq #"\\d" "a1b2c3")', '["1" "2" "3"]'),
    ('(re-seq #"(\\w)=(\\d)" "a=1 b=2")', '[["a=1" "a" "1"] ["b=2" "b" "2"]]'),
    ('(re-seq #"x" "abc")', "nil"),
    ('(re-find (re-pattern "a.c") "xabcx")', '"abc"'),
    ('(re-pattern #"a")', '#"a"'),
    ('(re-find #"(?i)hello" "HeLLo")', '"HeLLo"'),
    ('(re-find #"(?<year>\\d{4})" "in 2024")', '["2024" "2024"]'),
    ('(re-matches #"[a-z]+@[a-z]+\\.com" "joe@site.com")', '"joe@site.com"'),
    ('(re-find #"(\\d{1,3}\\.){3}\\d{1,3}" "ip 10.0.0.1")', '["10.0.0.1" "0."]'),
    ('(re-find #"(ab|cd)+" "xabcdab")', '["abcdab" "ab"]'),
    ('(re-find #"(a|b)*c" "ababc")', '["ababc" "b"]'),
    ('(re-find #"\\w+\\s*\\w+" "hi there")', '"hi there"'),
    ('(re-find #"^a\\z" "a")', '"a"'),
    ('(re-find #"(?:x|xy)*z" "xxyz")', '"xxyz"'),
    ('(re-find #"(?:foo|bar)*baz" "foobarbaz")', '"foobarbaz"'),
    ('(re-find #"(\\s|\\S)*" "a b")', '["a b" "b"]'),
    # patterns that backtrack catastrophically elsewhere run in linear time on RE2
    ('(re-find #"(a+)+$" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")', "nil"),
    (
        '(re-matches #"(a?){28}a{28}" (apply str (repeat 28 "a")))',
        '["aaaaaaaaaaaaaaaaaaaaaaaaaaaa" ""]',
    ),
    ('(count (re-find #"\\d*\\d*\\d*\\d*\\d*x" (apply str (repeat 50000 "1"))))', "0"),
    ('(re-find #"(x+x+)+y" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")', "nil"),
    # Java spellings
    ('(re-find #"\\u00e9+" "caf\u00e9\u00e9")', '"\u00e9\u00e9"'),
    ('(re-find #"a\\Z" "ba")', '"a"'),
    ('(re-find #"\\p{L}+" "h\u00e9llo!")', '"h\u00e9llo"'),
    ('(re-find #"\\w+" "h\u00e9llo")', '"h"'),
    ('(split "a1b2c" #"(?<d>\\d)")', '["a" "b" "c"]'),
    ('(replace "2024-05" #"(?<y>\\d+)-(?<m>\\d+)" "${m}/${y}")', '"05/2024"'),
    ('(extract #"id=(\\d+)" "x id=42")', '"42"'),
    ('(extract-int #"id=(\\d+)" "x id=42")', "42"),
]


@pytest.mark.parametrize(("src", "expected"), REGEX)
def test_regex(src: str, expected: str) -> None:
    check_value(src, expected)


ERRORS = [
    ("(str/upper-case :a)", "type", "upper-case expects a string, got keyword :a"),
    ("(upper-case nil)", "type", "upper-case expects a string, got nil"),
    ('(subs "abc" 2 1)', "type", "subs: indexes 2..1 are out of range"),
    ('(subs "abc" 5)', "type", "out of range for a string of 3 characters"),
    ("(subs 5 1)", "type", "subs expects a string"),
    ('(join "," 5)', "type", "join expects a collection"),
    ('(split 5 #",")', "type", "split expects a string, got integer 5"),
    ('(split "a" 5)', "type", "split expects a regex"),
    ("(trim 1)", "type", "trim expects a string"),
    ('(starts-with? "a" nil)', "type", "starts-with? expects a string"),
    ('(includes? nil "a")', "type", "includes? expects a string"),
    ('(replace "a" "" "b")', "type", "must not be empty"),
    ('(replace "a" "a" 1)', "type", "a string replacement for a string match"),
    ('(replace "a" #"(a)" "$2")', "type", "group 2"),
    ('(replace "a" 5 "b")', "type", "replace expects a string or regex to match"),
    ("(name 5)", "type", "name expects a keyword or string, got integer 5"),
    ("(keyword 5)", "type", "keyword expects a string"),
    ("(parse-long 5)", "type", "parse-long expects a string, got integer 5"),
    ("(parse-double nil)", "type", "parse-double expects a string, got nil"),
    ('(format "%d" 1.5)', "type", "format %d expects an integer"),
    ('(format "%d" "x")', "type", "format %d expects an integer"),
    ('(format "%f" "x")', "type", "format %f expects a number"),
    ('(format "%s %s" 1)', "type", "needs more arguments"),
    ('(format "%q" 1)', "type", "unsupported conversion %q"),
    ('(format "50%")', "type", "stray %"),
    ('(format "%1000d" 1)', "limit", "widths and precisions above 100"),
    ("(format 5)", "type", "format expects a string"),
    ('(re-find #"a" 5)', "type", "re-find expects a string to match, got integer 5"),
    ('(re-find 5 "a")', "type", "re-find expects a regex"),
    ('(re-matches #"a" nil)', "type", "re-matches expects a string to match"),
    ("(re-pattern 5)", "type", "re-pattern expects a string"),
    ('(re-pattern "(")', "type", "invalid regex"),
    ('(re-pattern "(a)\\\\1")', "type", "backreferences (\\1, \\k<name>) are not supported"),
    ('(re-pattern "(?<x>a)\\\\k<x>")', "type", "backreferences"),
    ('(re-pattern "(?P<x>a)(?P=x)")', "type", "backreferences"),
    ('(re-pattern "a(?=b)")', "type", "lookahead (?=...) (?!...) is not supported"),
    ('(re-pattern "a(?!b)")', "type", "take a group"),
    ('(re-pattern "(?<=a)b")', "type", "lookbehind"),
    ('(re-pattern "(?<!a)b")', "type", "lookbehind"),
    ('(re-pattern "(?>a)")', "type", "write (?:...)"),
    ('(re-pattern "a*+")', "type", "possessive quantifiers"),
    ('(re-pattern "(?x) a")', "type", "free-spacing"),
    ('(re-pattern "a{2000}")', "type", "invalid regex"),
    ('(re-pattern (apply str (repeat 10001 "a")))', "limit", "a regex of 10001 characters"),
    ('(re-find #"(a)" "a" 1)', "arity", "re-find"),
]


@pytest.mark.parametrize(("src", "category", "fragment"), ERRORS)
def test_string_errors(src: str, category: str, fragment: str) -> None:
    check_error(src, category, fragment)


def test_regex_input_is_capped() -> None:
    limits = Limits(max_regex_input=10)
    check_error(
        '(re-find #"a" (apply str (repeat 11 "b")))', "limit", "regex input limit of 10", limits
    )
    check_error('(re-seq #"a" (apply str (repeat 11 "b")))', "limit", "regex input limit", limits)
    check_error('(split (apply str (repeat 11 "b")) #"a")', "limit", "regex input", limits)


def test_string_results_are_capped() -> None:
    limits = Limits(max_string_length=10)
    check_error(
        '(apply str (repeat 11 "b"))', "limit", "str would build a string of more than 10", limits
    )
    check_error('(join "," (range 10))', "limit", "join would build", limits)
    check_error('(replace "aaaaa" "a" "bbb")', "limit", "replace would build", limits)
    check_error('(replace "aaaaa" #"a" "bbb")', "limit", "replace would build", limits)
    check_error('(replace "aaaaa" #"a" #(str % % %))', "limit", "replace would build", limits)
    check_error('(format "%50s" "x")', "limit", "format would build", limits)
    check_error('(format "%s" (range 10))', "limit", "format would build", limits)
    check_error("(pr-str (range 10))", "limit", "pr-str would build", limits)
    check_error("(str [(range 10)])", "limit", "str would build", limits)
    assert run_sync('(format "%.3s" (range 10))', limits=limits).value == "[0 "


NAMESPACED = [
    ('(clojure.string/blank? "")', "true"),
    ('(str/blank? "x")', "false"),
    ('(clojure.string/capitalize "ab")', '"Ab"'),
    ('(str/capitalize "AB")', '"Ab"'),
    ('(clojure.string/ends-with? "ab" "b")', "true"),
    ('(str/ends-with? "ab" "a")', "false"),
    ('(clojure.string/includes? "ab" "b")', "true"),
    ('(clojure.string/index-of "ab" "b")', "1"),
    ('(str/index-of "ab" "z")', "nil"),
    ('(clojure.string/last-index-of "abab" "a")', "2"),
    ('(str/last-index-of "abab" "b")', "3"),
    ('(clojure.string/lower-case "AB")', '"ab"'),
    ('(clojure.string/upper-case "ab")', '"AB"'),
    ('(clojure.string/replace "a.b" "." "-")', '"a-b"'),
    ('(clojure.string/replace-first "aa" "a" "b")', '"ba"'),
    ('(clojure.string/split "a b" #" ")', '["a" "b"]'),
    ('(clojure.string/split-lines "a\\nb")', '["a" "b"]'),
    ('(clojure.string/starts-with? "ab" "a")', "true"),
    ('(clojure.string/trim " a ")', '"a"'),
    ('(clojure.string/trim-newline "a\\n")', '"a"'),
    ('(str/trim-newline "a\\r\\n")', '"a"'),
    ('(clojure.string/triml " a")', '"a"'),
    ('(str/triml " a ")', '"a "'),
    ('(clojure.string/trimr "a ")', '"a"'),
    ('(str/trimr " a ")', '" a"'),
]


@pytest.mark.parametrize(("src", "expected"), NAMESPACED)
def test_namespaced_string_functions(src: str, expected: str) -> None:
    check_value(src, expected)
