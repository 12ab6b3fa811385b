"""Turning a checked tree into nested closures, once per expression text.

Every decision that depends only on the expression (node type, the Java types on each side,
which conversion applies) is taken here; the closures left behind only look up properties,
convert, compare and combine. A condition returns True, False or None (SQL's unknown); a Java
RuntimeException is a FilterEvaluationError, which ends the whole evaluation as in Java.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from broker.filter.comparison import comparator, double_compare
from broker.filter.java_text import parse_double, parse_int, parse_long
from broker.filter.nodes import (
    NUMERIC,
    And,
    BoolCast,
    Compare,
    Equal,
    In,
    Kind,
    Literal,
    Negate,
    Node,
    Not,
    Or,
    Property,
    constant_number,
    is_boolean,
    kind_of,
)

Properties = Mapping[str, str]
Condition = Callable[[Properties], bool | None]
Operand = Callable[[Properties], Any]

_ORDER = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_PARSE_INTEGER = {Kind.INT: parse_int, Kind.LONG: parse_long}


def condition(node: Node) -> Condition:
    match node:
        case And(operands=operands):
            return _and([condition(o) for o in operands])
        case Or(operands=operands):
            return _or([condition(o) for o in operands])
        case Not(operand=operand):
            return _not(condition(operand))
        case Equal(left=left, right=right):
            return _equal(left, right)
        case Compare(op=op, left=left, right=right):
            return _compare(op, left, right)
        case In(prop=Property(name=name), values=values, negated=negated):
            return _in(name, values, negated)
        case BoolCast(prop=Property(name=name)):
            return _bool_cast(name)
        case Literal(value=value):
            assert value is None or isinstance(value, bool)
            return lambda properties: value
    raise AssertionError(f"not a condition: {node!r}")


def operand(node: Node) -> Operand:
    """A value for = or the ordering operators: its kind is `kind_of(node)`, or it is None."""
    if is_boolean(node):
        return condition(node)
    if isinstance(node, Property):
        name = node.name
        return lambda properties: properties.get(name)
    if isinstance(node, Literal):
        value = node.value
        return lambda properties: value
    assert isinstance(node, Negate)
    number = constant_number(node)
    if number is not None:
        return lambda properties: number
    innermost = node.operand
    while isinstance(innermost, Negate):
        innermost = innermost.operand
    if is_boolean(innermost):
        # Java still evaluates what it cannot negate, so that one's exceptions still count.
        inner = condition(innermost)

        def negate_condition(properties: Properties) -> None:
            inner(properties)

        return negate_condition
    return lambda properties: None  # a String, TRUE, NULL or a negated one of those


def _and(parts: list[Condition]) -> Condition:
    """Java's left-deep binary ANDs, folded: FALSE wins at once, else unknown beats TRUE."""
    if len(parts) == 2:
        left, right = parts

        def and2(properties: Properties) -> bool | None:
            a = left(properties)
            if a is False:
                return False
            b = right(properties)
            if b is False:
                return False
            return None if a is None or b is None else True

        return and2

    def and_n(properties: Properties) -> bool | None:
        unknown = False
        for part in parts:
            result = part(properties)
            if result is False:
                return False
            unknown = unknown or result is None
        return None if unknown else True

    return and_n


def _or(parts: list[Condition]) -> Condition:
    """The mirror image of _and: TRUE wins at once, else unknown beats FALSE."""
    if len(parts) == 2:
        left, right = parts

        def or2(properties: Properties) -> bool | None:
            a = left(properties)
            if a is True:
                return True
            b = right(properties)
            if b is True:
                return True
            return None if a is None or b is None else False

        return or2

    def or_n(properties: Properties) -> bool | None:
        unknown = False
        for part in parts:
            result = part(properties)
            if result is True:
                return True
            unknown = unknown or result is None
        return None if unknown else False

    return or_n


def _not(inner: Condition) -> Condition:
    def not_(properties: Properties) -> bool | None:
        result = inner(properties)
        return None if result is None else not result

    return not_


def _in(name: str, values: frozenset[str], negated: bool) -> Condition:
    def in_(properties: Properties) -> bool | None:
        text = properties.get(name)
        return None if text is None else (text in values) is not negated

    return in_


def _bool_cast(name: str) -> Condition:
    # A property is a String, never a Boolean: present means FALSE, even if it reads "true".
    return lambda properties: None if properties.get(name) is None else False


def _equal(left: Node, right: Node) -> Condition:
    """Null rules of doCreateEqual: null = null is TRUE; null on the left alone is unknown,
    on the right alone FALSE (so `'x' <> a` matches when `a` is absent, `a <> 'x'` does not)."""
    if isinstance(left, Property) and isinstance(right, Literal):
        return _property_equals_literal(left.name, right)
    compare, left_value, right_value = _comparator(left, right), operand(left), operand(right)

    def equal(properties: Properties) -> bool | None:
        a, b = left_value(properties), right_value(properties)
        if a is None:
            return True if b is None else None
        if b is None:
            return False
        return compare(a, b) == 0

    return equal


def _property_equals_literal(name: str, literal: Literal) -> Condition:
    """The common `a = 'x'`, `a = 5`, `a IS NULL` shapes, without the generic plumbing."""
    value = literal.value
    if literal.kind is Kind.NULL:
        return lambda properties: properties.get(name) is None
    if literal.kind is Kind.STRING:
        return lambda properties: None if (text := properties.get(name)) is None else text == value
    compare = comparator(Kind.STRING, literal.kind)

    def equals_converted(properties: Properties) -> bool | None:
        text = properties.get(name)
        return None if text is None else compare(text, value) == 0

    return equals_converted


def _compare(op: str, left: Node, right: Node) -> Condition:
    """> >= < <=: unknown if either side is null; two Strings are both read as doubles."""
    test = _ORDER[op]
    number = constant_number(right)
    if isinstance(left, Property) and number is not None:
        return _property_against_number(test, left.name, kind_of(right), number)
    compare, left_value, right_value = _comparator(left, right), operand(left), operand(right)
    if kind_of(left) is Kind.STRING and kind_of(right) is Kind.STRING:
        compare = _as_doubles

    def ordered(properties: Properties) -> bool | None:
        a = left_value(properties)
        if a is None:
            return None
        b = right_value(properties)
        if b is None:
            return None
        return test(compare(a, b), 0)

    return ordered


def _property_against_number(
    test: Callable[[Any, Any], bool], name: str, kind: Kind, number: float
) -> Condition:
    """`a > 5`: the hot shape. Integers compare exactly once parsed; doubles need Java's order."""
    assert kind in NUMERIC
    if kind is Kind.DOUBLE:

        def against_double(properties: Properties) -> bool | None:
            text = properties.get(name)
            return None if text is None else test(double_compare(parse_double(text), number), 0)

        return against_double
    parse = _PARSE_INTEGER[kind]

    def against_integer(properties: Properties) -> bool | None:
        text = properties.get(name)
        return None if text is None else test(parse(text), number)

    return against_integer


def _comparator(left: Node, right: Node) -> Callable[[Any, Any], int]:
    return comparator(kind_of(left), kind_of(right))


def _as_doubles(a: str, b: str) -> int:
    return double_compare(parse_double(a), parse_double(b))
