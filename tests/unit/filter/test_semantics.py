"""What a compiled SQL92 filter says about one message, row by row, as RocketMQ 4.9.x says it.

Every row's outcome was checked against Java's own SelectorParser and expression classes
(rocketmq-all-4.9.8 filter module). Outcomes: TRUE / FALSE / NULL are Java's evaluate()
results; RAISE is where Java throws, which ExpressionMessageFilter logs and counts as no match.
Only TRUE delivers the message.
"""

from __future__ import annotations

import pytest

from broker.filter import FilterEvaluationError, compile_sql92

TRUE, FALSE, NULL, RAISE = "TRUE", "FALSE", "NULL", "RAISE"

ROWS: list[tuple[str, dict[str, str], str]] = [
    # -- the everyday shapes -------------------------------------------------------------
    ("a > 5 AND b = 'x'", {"a": "6", "b": "x"}, TRUE),
    ("a > 5 AND b = 'x'", {"a": "5", "b": "x"}, FALSE),
    ("a > 5 AND b = 'x'", {"b": "x"}, NULL),
    ("b = 'x' OR b = 'y'", {"b": "y"}, TRUE),
    ("TAGS = 'TagA'", {"TAGS": "TagA"}, TRUE),
    ("a = 'x'", {"a": "X"}, FALSE),  # string equality is case-sensitive
    ("a = ''", {"a": ""}, TRUE),
    ("a = 'it''s'", {"a": "it's"}, TRUE),  # '' inside quotes is one quote
    ("a = 'line\nbreak'", {"a": "line\nbreak"}, TRUE),
    ("TRUE", {}, TRUE),
    ("FALSE", {}, FALSE),
    ("NULL", {}, NULL),
    # -- keywords are case-insensitive, property names are not ------------------------------
    ("a > 5 and b = 'x'", {"a": "6", "b": "x"}, TRUE),
    ("a iS nOt NuLl", {"a": "1"}, TRUE),
    ("a in ('x')", {"a": "x"}, TRUE),
    ("A = 1", {"a": "1"}, NULL),
    ("$a_1 = 1", {"$a_1": "1"}, TRUE),
    # -- numbers: the property text is read as the literal's Java type ----------------------
    ("a = 5", {"a": "5"}, TRUE),
    ("a = 5", {"a": "+5"}, TRUE),
    ("a = 5", {"a": "05"}, TRUE),
    ("a = 5", {"a": "5.0"}, RAISE),  # Integer.valueOf("5.0") throws
    ("a = 5", {"a": " 5"}, RAISE),  # ... and so does a space
    ("a = 5", {"a": "x"}, RAISE),
    ("a = 5", {"a": "2147483648"}, RAISE),  # an int literal reads the property as an int
    ("a = 2147483648", {"a": "2147483648"}, TRUE),  # a long literal reads it as a long
    ("a = 5L", {"a": "5"}, TRUE),
    ("a = 5.0", {"a": "5"}, TRUE),
    ("a = 5.0", {"a": " 5.0 "}, TRUE),  # Double.valueOf trims
    ("a = 5.0", {"a": "5d"}, TRUE),
    ("a = 5.0", {"a": "0x1.4p2"}, TRUE),  # hex floats too
    ("a = 5.5", {"a": "5"}, FALSE),
    ("a > 1.5", {"a": "NaN"}, TRUE),  # Double.compare puts NaN above everything
    ("a > 1.5", {"a": "nan"}, RAISE),
    ("a > 1.5", {"a": "Infinity"}, TRUE),
    ("a > 1.5", {"a": "2"}, TRUE),
    ("a > 5", {"a": "6"}, TRUE),
    ("a >= 5", {"a": "5"}, TRUE),
    ("a < 5", {"a": "-7"}, TRUE),
    ("a <= -5", {"a": "-5"}, TRUE),
    ("a > 5000000000", {"a": "9999999999"}, TRUE),
    ("a > 1", {"a": "99999999999999999999"}, RAISE),
    ("5 < a", {"a": "6"}, TRUE),
    ("a = .5", {"a": "0.5"}, TRUE),
    ("a = 5E1", {"a": "50"}, TRUE),
    ("a = 5.e-1", {"a": "0.5"}, TRUE),
    ("a = -2147483648", {"a": "-2147483648"}, TRUE),
    ("a > --5", {"a": "6"}, TRUE),  # no line break, so `--` is two minus signs
    ("a = + 5", {"a": "5"}, TRUE),
    ("5 > 3", {}, TRUE),
    # -- two properties ----------------------------------------------------------------------
    ("a > b", {"a": "2", "b": "1.5"}, TRUE),  # ordering reads both as doubles
    ("a >= b", {"a": "1", "b": "1.0"}, TRUE),
    ("a = b", {"a": "1", "b": "1.0"}, FALSE),  # ... but = compares the strings
    ("a > b", {"a": "x", "b": "1"}, RAISE),
    ("a = b", {}, TRUE),  # null = null is TRUE in RocketMQ
    ("a <> b", {}, FALSE),
    # -- booleans ------------------------------------------------------------------------------
    ("a = TRUE", {"a": "true"}, TRUE),
    ("a = TRUE", {"a": "TRUE"}, TRUE),
    ("a = TRUE", {"a": "yes"}, FALSE),
    ("a = FALSE", {"a": "anything"}, TRUE),  # Boolean.valueOf: not "true" means false
    ("TRUE = a", {"a": "true"}, RAISE),  # Java casts the Boolean to String
    ("1 = TRUE", {}, FALSE),
    ("a", {"a": "true"}, FALSE),  # a bare property is a String, never a Boolean
    ("a", {}, NULL),
    ("NOT a", {"a": "x"}, TRUE),
    ("(a > 1) = TRUE", {"a": "2"}, TRUE),
    ("(a > 1) = 'true'", {"a": "2"}, RAISE),
    # -- nulls: absent properties ----------------------------------------------------------------
    ("a = 'x'", {}, NULL),
    ("a <> 'x'", {}, NULL),
    ("'x' <> a", {}, TRUE),  # null only on the right is FALSE, so its NOT is TRUE
    ("'x' = a", {}, FALSE),
    ("a > 5", {}, NULL),
    ("a IS NULL", {}, TRUE),
    ("a IS NULL", {"a": ""}, FALSE),
    ("a IS NOT NULL", {"a": ""}, TRUE),
    ("NULL IS NULL", {}, TRUE),
    ("1 IS NOT NULL", {}, TRUE),
    ("a IS NULL IS NULL", {}, FALSE),
    ("NOT NULL", {}, NULL),
    ("a > -'x'", {"a": "1"}, NULL),  # minus on a non-number is null
    # -- three-valued AND / OR / NOT ------------------------------------------------------------
    ("TRUE AND NULL", {}, NULL),
    ("FALSE AND NULL", {}, FALSE),
    ("TRUE OR NULL", {}, TRUE),
    ("FALSE OR NULL", {}, NULL),
    ("NOT (a = 'x')", {"a": "y"}, TRUE),
    ("NOT (a = 'x')", {}, NULL),
    ("NOT NOT a", {"a": "1"}, FALSE),
    ("a = 5 OR TRUE", {"a": "x"}, RAISE),  # an exception ends the evaluation ...
    ("TRUE OR a = 5", {"a": "x"}, TRUE),  # ... unless it was short-circuited away
    ("FALSE AND a = 5", {"a": "x"}, FALSE),
    ("a = 5 AND FALSE", {"a": "x"}, RAISE),
    # -- precedence: NOT binds tightest, then comparisons, then = / <>, AND, OR ------------------
    ("NOT a = 'x'", {"a": "y"}, RAISE),  # (NOT a) = 'x': a Boolean beside a String
    ("NOT a = 'x'", {}, NULL),
    ("a = 1 OR b = 1 AND c = 1", {"a": "1", "b": "0", "c": "0"}, TRUE),
    ("(a = 1 OR b = 1) AND c = 1", {"a": "1", "b": "0", "c": "0"}, FALSE),
    ("a = 1 = TRUE", {"a": "1"}, TRUE),
    # -- BETWEEN -------------------------------------------------------------------------------
    ("a BETWEEN 1 AND 5", {"a": "1"}, TRUE),
    ("a BETWEEN 1 AND 5", {"a": "6"}, FALSE),
    ("a BETWEEN 1 AND 1.5", {"a": "1"}, TRUE),
    ("a BETWEEN -5 AND -1", {"a": "-3"}, TRUE),
    ("a BETWEEN -1 AND -5", {"a": "-3"}, FALSE),  # minus-signed bounds are not checked
    ("a NOT BETWEEN 5 AND 1", {"a": "3"}, TRUE),  # NOT BETWEEN bounds are never checked
    ("a NOT BETWEEN 1 AND 5", {"a": "3"}, FALSE),
    ("a BETWEEN b AND c", {"a": "2", "b": "1", "c": "3"}, TRUE),
    ("a BETWEEN 1 AND 5 AND b = 1", {"a": "3", "b": "1"}, TRUE),
    ("a BETWEEN 1 AND 5", {}, NULL),
    # -- IN ------------------------------------------------------------------------------------
    ("a IN ('x', 'y')", {"a": "y"}, TRUE),
    ("a IN ('x', 'y')", {"a": "z"}, FALSE),
    ("a IN ('1', '2', '3', '4', '5', '6')", {"a": "6"}, TRUE),
    ("a NOT IN ('x')", {"a": "y"}, TRUE),
    ("a NOT IN ('x')", {}, NULL),
    ("(a) IN ('x')", {"a": "x"}, TRUE),
    # -- comments and whitespace -------------------------------------------------------------------
    ("a = 1 -- note\n AND b = 2", {"a": "1", "b": "2"}, TRUE),
    ("a = /* note */ 1", {"a": "1"}, TRUE),
    ("a\t=\r\n1\f", {"a": "1"}, TRUE),
    # -- once a whole expression is read, RocketMQ ignores the rest of the text --------------------
    ("a = 1 b = 2", {"a": "1"}, TRUE),
    ("a = 1 )", {"a": "1"}, TRUE),
    ("a = 01", {}, NULL),  # `0` then an ignored `1`
    ("a = 1 x #", {"a": "1"}, TRUE),
    ("b CONTAINS 'x'", {"b": "xyz"}, FALSE),  # 4.9 has no CONTAINS: this is just `b`
    ("b STARTSWITH 'x' OR a = 1", {"a": "1", "b": "x"}, FALSE),
]


@pytest.mark.parametrize(("text", "properties", "outcome"), ROWS, ids=[r[0] for r in ROWS])
def test_evaluates_like_rocketmq(text: str, properties: dict[str, str], outcome: str) -> None:
    expr = compile_sql92(text)
    if outcome == RAISE:
        with pytest.raises(FilterEvaluationError):
            expr.evaluate(properties)
    else:
        assert expr.evaluate(properties) is {TRUE: True, FALSE: False, NULL: None}[outcome]
    assert expr.matches(properties) is (outcome == TRUE)


def test_compiled_expressions_are_cached_by_text() -> None:
    text = "cached > 1"
    assert compile_sql92(text) is compile_sql92(text)
    assert compile_sql92(text).text == text


def test_matches_never_raises_even_on_values_java_could_not_hold() -> None:
    expr = compile_sql92("a > 5")
    assert expr.matches({"a": None}) is False  # type: ignore[dict-item]
    assert expr.matches({"a": b"6"}) is False  # type: ignore[dict-item]
