"""Expressions RocketMQ 4.9.x refuses (MQFilterException), and what our refusal says.

Each of these was checked to fail in Java's SelectorParser too, whether in its lexer, its
grammar, or the checks its parser actions make (ComparisonExpression.create*, ConstantExpression).
"""

from __future__ import annotations

import pytest

from broker.filter import FilterSyntaxError, compile_sql92
from broker.filter.parser import MAX_DEPTH

REFUSED: list[tuple[str, str]] = [
    # -- nothing, or not enough ----------------------------------------------------------------
    ("", "found end of expression at position 1"),
    ("   ", "found end of expression at position 4"),
    ("-- only a comment\n", "found end of expression"),
    ("a =", "expected a value, a property name or '(', found end of expression at position 4"),
    ("a = 1 AND", "found end of expression at position 10"),
    ("a = 1 OR", "found end of expression"),
    ("(a = 1", "expected ')' to close the '(' at position 1"),
    ("a BETWEEN 1", "expected 'AND' between the BETWEEN bounds"),
    ("a IS", "expected 'NOT' or 'NULL' after IS"),
    ("a IS NOT", "expected 'NULL' after IS NOT"),
    ("a NOT", "expected BETWEEN or IN after NOT"),
    ("a NOT x", "expected BETWEEN or IN after NOT, found 'x' at position 7"),
    ("a = 1 NOT", "expected BETWEEN or IN after NOT"),  # NOT in this position must continue
    # -- lexical errors ----------------------------------------------------------------------
    ("a = 'x", "unterminated string literal starting at position 5"),
    ("a = /* x", "unterminated /* comment starting at position 5"),
    ("a = 1 #", "unexpected character '#' at position 7"),  # the one token peeked after the end
    ("a != 1", "unexpected character '!' at position 3"),
    ('a = "x"', "unexpected character '\"' at position 5"),
    ("a.b = 1", "unexpected character '.' at position 2"),
    ("é = 1", "unexpected character 'é' at position 1"),
    ("a\u00a0= 1", "unexpected character '\\xa0' at position 2"),
    # -- grammar ------------------------------------------------------------------------------
    ("a == 1", "found '=' at position 4"),
    ("= 1", "found '=' at position 1"),
    ("a IN (1, 2)", "expected a string literal in the IN list (strings only), found '1'"),
    ("a IN ()", "expected a string literal in the IN list"),
    ("a IN ('x', NULL)", "expected a string literal in the IN list"),
    ("a IN 'x'", "expected '(' after IN"),
    ("a IN ('x'", "expected ')' to close the IN list"),
    # -- not a condition ------------------------------------------------------------------------
    ("1", "1 is not a condition"),
    ("'x'", "'x' is not a condition"),
    ("-a", "-a is not a condition"),
    ("NOT 1", "1 is not a condition"),
    ("a = 1 AND 5", "5 is not a condition"),
    ("1a = 1", "1 is not a condition"),  # `1` then an ignored `a = 1`
    # -- literal ranges ------------------------------------------------------------------------
    ("a = 9223372036854775808", "integer literal 9223372036854775808 does not fit in a Java long"),
    ("a = 1e400", "floating-point literal 1e400 is larger than a Java double"),
    ("a > 0.0", "floating-point literal 0.0 is below Double.MIN_VALUE"),  # sic: Java refuses 0.0
    ("a = 0e5", "below Double.MIN_VALUE"),
    ("a = 1e-400", "below Double.MIN_VALUE"),
    # -- operand checks ---------------------------------------------------------------------------
    ("a > 'x'", "'x' cannot be compared with >: not a number (at position 3, '>')"),
    ("'x' < a", "'x' cannot be compared with <: not a number"),
    ("a >= TRUE", "TRUE cannot be compared with >=: not a number"),
    ("a <= NULL", "NULL cannot be compared with <=: not a number"),
    ("a > 1 > 2", "(a > 1) cannot be compared with >: it is a condition"),
    ("NOT a > 1", "NOT a cannot be compared with >: it is a condition"),
    ("a = NULL", "NULL cannot be compared with = or <>; use IS [NOT] NULL"),
    ("NULL <> a", "NULL cannot be compared with = or <>"),
    ("TRUE = 1", "TRUE cannot be compared with 1"),
    ("FALSE = 'x'", "FALSE cannot be compared with 'x'"),
    ("a BETWEEN 5 AND 1", "BETWEEN 5 AND 1: the lower bound is above the upper"),
    ("a BETWEEN 1.5 AND 1", "the lower bound is above the upper"),
    ("a BETWEEN NULL AND 5", "BETWEEN bounds cannot be NULL"),
    ("a BETWEEN 'a' AND 'b'", "'a' cannot be compared with >=: not a number"),
    ("a NOT BETWEEN 'a' AND 5", "'a' cannot be compared with <: not a number"),
    ("'x' IN ('x')", "IN needs a property on its left, not 'x'"),
    ("NOT a IN ('x')", "IN needs a property on its left, not NOT a"),
    ("-a NOT IN ('x')", "NOT IN needs a property on its left, not -a"),
]


@pytest.mark.parametrize(("text", "problem"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refuses_what_rocketmq_refuses(text: str, problem: str) -> None:
    with pytest.raises(FilterSyntaxError) as refusal:
        compile_sql92(text)
    assert problem in str(refusal.value)


def test_nesting_is_limited_where_java_only_has_its_stack() -> None:
    deep_enough = "(" * (MAX_DEPTH - 1) + "a = 1" + ")" * (MAX_DEPTH - 1)
    assert compile_sql92(deep_enough).matches({"a": "1"})
    with pytest.raises(FilterSyntaxError, match="nests more than"):
        compile_sql92("(" * MAX_DEPTH + "a = 1" + ")" * MAX_DEPTH)
    with pytest.raises(FilterSyntaxError, match="nests more than"):
        compile_sql92("a" + " IS NULL" * (MAX_DEPTH + 1))


def test_long_and_or_chains_are_not_nesting() -> None:
    many = " OR ".join(f"a = '{i}'" for i in range(1000))
    assert compile_sql92(many).matches({"a": "999"})
    assert not compile_sql92(" AND ".join(["a = '1'"] * 1000 + ["b = 1"])).matches({"a": "1"})
