"""Java's ComparisonExpression.__compare, resolved per pair of static kinds.

Java looks at the two runtime classes on every call; here both sides' kinds are known when the
expression is compiled, so `comparator()` hands back the one conversion that pair needs. The
convertStringExpressions flag is always on (SelectorParser.parse sets it), so a String beside a
number or Boolean is converted to that type. Pairs Java has no rule for compare as -1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from broker.filter.errors import FilterEvaluationError
from broker.filter.java_text import parse_boolean, parse_double, parse_int, parse_long
from broker.filter.nodes import NUMERIC, Kind

Comparator = Callable[[Any, Any], int]


def double_compare(a: float, b: float) -> int:
    """Double.compare: like <, except -0.0 < 0.0, and NaN equals itself and is above +inf."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return a_nan - b_nan
    return (math.copysign(1.0, a) > 0) - (math.copysign(1.0, b) > 0)


def _plain(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _boolean_beside_string(a: Any, b: Any) -> int:
    # Java's Boolean branch casts the Boolean itself to String: a ClassCastException.
    raise FilterEvaluationError(f"Boolean {a} cannot be compared with String {b!r}")


def _unordered(a: Any, b: Any) -> int:
    return -1


def _never(a: Any, b: Any) -> int:
    raise AssertionError("a null operand reached a comparator")


_FROM_STRING = {Kind.INT: parse_int, Kind.LONG: parse_long, Kind.BOOLEAN: parse_boolean}


def comparator(left: Kind, right: Kind) -> Comparator:
    """compare(a, b) -> -1/0/1 for non-null values of these kinds. STRING beside STRING is only
    asked for equality here; the ordering operators read both sides as doubles first."""
    if Kind.NULL in (left, right):
        return _never
    if left is right:
        return double_compare if left is Kind.DOUBLE else _plain
    if left is Kind.STRING:
        if right is Kind.DOUBLE:
            return lambda a, b: double_compare(parse_double(a), b)
        parse_left = _FROM_STRING[right]
        return lambda a, b: _plain(parse_left(a), b)
    if left is Kind.BOOLEAN:
        return _boolean_beside_string if right is Kind.STRING else _unordered
    # left is numeric from here on
    if right is Kind.BOOLEAN:
        return _unordered
    if right is Kind.STRING:
        if left is Kind.DOUBLE:
            return lambda a, b: double_compare(a, parse_double(b))
        parse_right = _FROM_STRING[left]
        return lambda a, b: _plain(a, parse_right(b))
    assert left in NUMERIC and right in NUMERIC
    if Kind.DOUBLE in (left, right):  # Integer/Long widen to Double
        return lambda a, b: double_compare(float(a), float(b))
    return _plain  # Integer widens to Long: Python ints compare exactly either way
