"""Hypothesis: the filter agrees with Python's own arithmetic where Java's rules are plain, and
never fails in any way but the two it documents."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.filter import FilterEvaluationError, FilterSyntaxError, compile_sql92

INT32 = st.integers(-(2**31) + 1, 2**31 - 1)  # -2**31 itself can only be written as a long
finite_doubles = st.floats(allow_nan=False, allow_infinity=False)


def sql_number(value: float) -> str:
    """A literal for any number: the grammar has no negative literals, only unary minus."""
    return f"-{-value!r}" if value < 0 else repr(value)


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@given(value=INT32, low=INT32, high=INT32)
def test_an_integer_range_matches_as_python_compares(value: int, low: int, high: int) -> None:
    expr = compile_sql92(f"a > {sql_number(low)} AND a <= {sql_number(high)}")
    assert expr.matches({"a": str(value)}) is (low < value <= high)


@given(value=INT32, bound=INT32, op=st.sampled_from([">", ">=", "<", "<=", "=", "<>"]))
def test_not_flips_every_comparison_of_a_present_number(value: int, bound: int, op: str) -> None:
    comparison = f"a {op} {sql_number(bound)}"
    properties = {"a": str(value)}
    plain, negated = compile_sql92(comparison), compile_sql92(f"NOT ({comparison})")
    assert negated.evaluate(properties) is (not plain.evaluate(properties))
    assert plain.matches(properties) != negated.matches(properties)


@given(bound=INT32, op=st.sampled_from([">", ">=", "<", "<=", "=", "<>"]))
def test_an_absent_property_is_unknown_and_so_is_its_negation(bound: int, op: str) -> None:
    comparison = f"a {op} {sql_number(bound)}"
    assert compile_sql92(comparison).evaluate({}) is None
    assert compile_sql92(f"NOT ({comparison})").evaluate({}) is None


@given(value=st.integers(2**31, 2**63 - 1), bound=INT32)
def test_an_int_literal_cannot_read_a_long_property(value: int, bound: int) -> None:
    expr = compile_sql92(f"a > {sql_number(bound)}")
    assert not expr.matches({"a": str(value)})
    with pytest.raises(FilterEvaluationError):
        expr.evaluate({"a": str(value)})


@given(value=finite_doubles, bound=finite_doubles.filter(lambda x: x != 0))
def test_doubles_order_as_python_does_short_of_nan_and_zero(value: float, bound: float) -> None:
    properties = {"a": repr(value)}
    assert compile_sql92(f"a > {sql_number(bound)}").matches(properties) is (value > bound)
    assert compile_sql92(f"a <= {sql_number(bound)}").matches(properties) is (value <= bound)


@given(text=st.text(), other=st.text())
def test_any_string_literal_round_trips(text: str, other: str) -> None:
    expr = compile_sql92(f"a = {sql_string(text)}")
    assert expr.matches({"a": text})
    assert expr.matches({"a": other}) is (other == text)


@given(values=st.lists(st.text(max_size=5), min_size=1, max_size=8), probe=st.text(max_size=5))
def test_in_is_membership_and_not_in_its_opposite(values: list[str], probe: str) -> None:
    listed = ", ".join(sql_string(v) for v in values)
    assert compile_sql92(f"a IN ({listed})").matches({"a": probe}) is (probe in values)
    assert compile_sql92(f"a NOT IN ({listed})").matches({"a": probe}) is (probe not in values)


TRUTH = {"TRUE": True, "FALSE": False, "NULL": None}


@pytest.mark.parametrize(("left", "right"), list(itertools.product(TRUTH, TRUTH)))
def test_and_or_follow_sql_three_valued_logic(left: str, right: str) -> None:
    a, b = TRUTH[left], TRUTH[right]
    both = False if False in (a, b) else (None if None in (a, b) else True)
    either = True if True in (a, b) else (None if None in (a, b) else False)
    assert compile_sql92(f"{left} AND {right}").evaluate({}) is both
    assert compile_sql92(f"{left} OR {right}").evaluate({}) is either


PIECES = [*"ab15.eE+-'()=<>,/*#\n \t", "AND ", "OR ", "NOT ", "IS ", "NULL ", "IN ", "BETWEEN "]
SQLISH = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)
PROPERTY_TEXT = st.sampled_from(["1", "5.5", "x", "", "true", "NaN", "-0", "1e3"])


@given(text=SQLISH, a=PROPERTY_TEXT, b=PROPERTY_TEXT)
def test_compiling_and_matching_fail_only_in_the_documented_ways(text: str, a: str, b: str) -> None:
    try:
        expr = compile_sql92(text)
    except FilterSyntaxError:
        return
    for properties in ({}, {"a": a}, {"a": a, "b": b}):
        try:
            result = expr.evaluate(properties)
        except FilterEvaluationError:
            assert expr.matches(properties) is False
        else:
            assert result in (True, False, None)
            assert expr.matches(properties) is (result is True)
