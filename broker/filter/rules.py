"""Building nodes the way RocketMQ's parser actions do, with the same compile-time refusals.

Java: ConstantExpression.createFromDecimal / createFloat, ComparisonExpression.create*
(checkLessThanOperand, checkEqualOperand, checkEqualOperandCompatability, the BETWEEN bound
check, IN on a property only) and SelectorParser.asBooleanExpression, all at 4.9.x. Every
RuntimeException those throw becomes an MQFilterException, i.e. a FilterSyntaxError here.
"""

from __future__ import annotations

import sys

from broker.filter.comparison import double_compare
from broker.filter.errors import FilterSyntaxError
from broker.filter.nodes import (
    NULL_LITERAL,
    NUMERIC,
    And,
    BoolCast,
    Compare,
    Equal,
    In,
    Kind,
    Literal,
    Node,
    Not,
    Or,
    Property,
    describe,
    is_boolean,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MAX = 2**63 - 1
DOUBLE_MIN = 5e-324  # Java's Double.MIN_VALUE: the smallest *positive* double


def integer_literal(text: str) -> Literal:
    """Integer when it fits 32 bits, else Long; an `L` suffix changes nothing. Never negative:
    the minus sign is a separate operator."""
    digits = text.rstrip("lL")
    value = int(digits)
    if value > LONG_MAX:
        raise FilterSyntaxError(f"integer literal {text} does not fit in a Java long")
    return Literal(value, Kind.INT if value <= INT_MAX else Kind.LONG)


def float_literal(text: str) -> Literal:
    value = float(text)
    if value > sys.float_info.max:
        raise FilterSyntaxError(f"floating-point literal {text} is larger than a Java double")
    # RocketMQ compares against Double.MIN_VALUE, which is positive: 0.0 is refused too.
    if value < DOUBLE_MIN:
        raise FilterSyntaxError(
            f"floating-point literal {text} is below Double.MIN_VALUE (RocketMQ refuses 0.0)"
        )
    return Literal(value, Kind.DOUBLE)


def as_boolean(node: Node) -> Node:
    if is_boolean(node):
        return node
    if isinstance(node, Property):
        return BoolCast(node)
    raise FilterSyntaxError(f"{describe(node)} is not a condition (it does not yield a boolean)")


def and_(left: Node, right: Node) -> And:
    """A chain stays flat (AND is associative under Java's rules, evaluation order included),
    so a thousand-term chain is not a thousand-deep tree."""
    left, right = as_boolean(left), as_boolean(right)
    head = left.operands if isinstance(left, And) else (left,)
    return And((*head, right))


def or_(left: Node, right: Node) -> Or:
    left, right = as_boolean(left), as_boolean(right)
    head = left.operands if isinstance(left, Or) else (left,)
    return Or((*head, right))


def equal(left: Node, right: Node) -> Equal:
    for side in (left, right):
        if side == NULL_LITERAL:
            raise FilterSyntaxError("NULL cannot be compared with = or <>; use IS [NOT] NULL")
    # Java only checks this one way round: `1 = TRUE` is allowed (and false).
    if (
        isinstance(left, Literal)
        and isinstance(right, Literal)
        and left.kind is Kind.BOOLEAN
        and right.kind is not Kind.BOOLEAN
    ):
        raise FilterSyntaxError(f"{describe(left)} cannot be compared with {describe(right)}")
    return Equal(left, right)


def not_equal(left: Node, right: Node) -> Not:
    return Not(equal(left, right))


def is_null(operand: Node) -> Equal:
    return Equal(operand, NULL_LITERAL)


def is_not_null(operand: Node) -> Not:
    return Not(Equal(operand, NULL_LITERAL))


def compare(op: str, left: Node, right: Node) -> Compare:
    for side in (left, right):
        _check_orderable(op, side)
    return Compare(op, left, right)


def _check_orderable(op: str, node: Node) -> None:
    """Only numbers, properties and minus-signed things may stand beside > >= < <=."""
    if isinstance(node, Literal):
        if node.kind not in NUMERIC:
            raise FilterSyntaxError(f"{describe(node)} cannot be compared with {op}: not a number")
    elif is_boolean(node):
        raise FilterSyntaxError(f"{describe(node)} cannot be compared with {op}: it is a condition")


def between(value: Node, low: Node, high: Node) -> And:
    if isinstance(low, Literal) and isinstance(high, Literal):
        if low.kind is Kind.NULL or high.kind is Kind.NULL:
            raise FilterSyntaxError("BETWEEN bounds cannot be NULL")
        # Only literal bounds are checked: `BETWEEN -1 AND -5` is accepted (and never true).
        if low.kind in NUMERIC and high.kind in NUMERIC and _numbers_compare(high, low) < 0:
            raise FilterSyntaxError(
                f"BETWEEN {describe(low)} AND {describe(high)}: the lower bound is above the upper"
            )
    return And((compare(">=", value, low), compare("<=", value, high)))


def not_between(value: Node, low: Node, high: Node) -> Or:
    return Or((compare("<", value, low), compare(">", value, high)))  # no bound check in Java


def in_list(operand: Node, values: list[str], *, negated: bool) -> In:
    if not isinstance(operand, Property):
        keyword = "NOT IN" if negated else "IN"
        raise FilterSyntaxError(f"{keyword} needs a property on its left, not {describe(operand)}")
    return In(operand, frozenset(values), negated)


def _numbers_compare(left: Literal, right: Literal) -> int:
    """Java's mixed-type numeric compare: widen to long, or to double if either is one."""
    a, b = left.value, right.value
    assert isinstance(a, int | float) and isinstance(b, int | float)
    if Kind.DOUBLE in (left.kind, right.kind):
        return double_compare(float(a), float(b))
    return (a > b) - (a < b)
