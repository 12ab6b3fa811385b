"""The parsed form of a selector: one node class per Java expression class it stands for.

Each operand has a static `Kind`, known when the expression is compiled: properties are always
Java Strings (message properties are a Map<String, String>), literals carry their Java type, and
everything boolean-valued is BOOLEAN. That lets the evaluator pick every type conversion up
front instead of inspecting values per message.
"""

from __future__ import annotations

import enum

import attrs


class Kind(enum.Enum):
    """The Java class a value has at run time (or NULL: the value is always null)."""

    STRING = "String"
    INT = "Integer"  # a literal that fits in 32 bits
    LONG = "Long"
    DOUBLE = "Double"
    BOOLEAN = "Boolean"
    NULL = "null"


NUMERIC = frozenset({Kind.INT, Kind.LONG, Kind.DOUBLE})

Value = str | int | float | bool | None


@attrs.frozen
class Literal:
    """A ConstantExpression straight from the text (TRUE/FALSE/NULL are BooleanConstantExpression).
    Only these count as "constants" for RocketMQ's compile-time checks: `-1` is a Negate."""

    value: Value
    kind: Kind


@attrs.frozen
class Property:
    name: str


@attrs.frozen
class Negate:
    """Unary minus: numbers only; anything else (a property's String included) yields null."""

    operand: Node


@attrs.frozen
class BoolCast:
    """A bare property used as a condition: null if absent, else FALSE (a String is no Boolean)."""

    prop: Property


@attrs.frozen
class Not:
    operand: Node


@attrs.frozen
class And:
    operands: tuple[Node, ...]  # a chain: Java nests it as a left-deep tree of binary ANDs


@attrs.frozen
class Or:
    operands: tuple[Node, ...]


@attrs.frozen
class Equal:
    """`=` and IS NULL (Java: ComparisonExpression.doCreateEqual)."""

    left: Node
    right: Node


@attrs.frozen
class Compare:
    op: str  # ">", ">=", "<" or "<="
    left: Node
    right: Node


@attrs.frozen
class In:
    prop: Property
    values: frozenset[str]
    negated: bool


Node = Literal | Property | Negate | BoolCast | Not | And | Or | Equal | Compare | In

NULL_LITERAL = Literal(None, Kind.NULL)


def is_boolean(node: Node) -> bool:
    """Java's `instanceof BooleanExpression`."""
    if isinstance(node, Literal):
        return node.kind in (Kind.BOOLEAN, Kind.NULL)
    return isinstance(node, BoolCast | Not | And | Or | Equal | Compare | In)


def kind_of(node: Node) -> Kind:
    if isinstance(node, Literal):
        return node.kind
    if isinstance(node, Property):
        return Kind.STRING
    if isinstance(node, Negate):
        inner = kind_of(node.operand)
        return inner if inner in NUMERIC else Kind.NULL
    return Kind.BOOLEAN


def constant_number(node: Node) -> int | float | None:
    """The value of a numeric literal, or of minus signs in front of one; else None."""
    sign = 1
    while isinstance(node, Negate):
        node, sign = node.operand, -sign
    if isinstance(node, Literal) and node.kind in NUMERIC:
        assert isinstance(node.value, int | float)
        return sign * node.value
    return None


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Negate | Not):
        return (node.operand,)
    if isinstance(node, BoolCast | In):
        return (node.prop,)
    if isinstance(node, And | Or):
        return node.operands
    if isinstance(node, Equal | Compare):
        return (node.left, node.right)
    return ()


def depth(node: Node) -> int:
    """Tree height, without recursion: the tree may be too deep for Python's stack."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(current))
    return deepest


def describe(node: Node, budget: int = 4) -> str:
    """SQL-ish text of a node for error messages, elided below `budget` levels (the tree may
    not have been depth-checked yet)."""
    if budget == 0:
        return "..."
    inner = budget - 1
    match node:
        case Literal(value=None):
            return "NULL"
        case Literal(value=bool(flag)):
            return "TRUE" if flag else "FALSE"
        case Literal(value=str(text)):
            return "'" + text.replace("'", "''") + "'"
        case Literal(value=number):
            return repr(number)
        case Property(name=name) | BoolCast(prop=Property(name=name)):
            return name
        case Negate(operand=operand):
            return "-" + describe(operand, inner)
        case Not(operand=operand):
            return "NOT " + describe(operand, inner)
        case And(operands=operands) | Or(operands=operands):
            joiner = " AND " if isinstance(node, And) else " OR "
            return "(" + joiner.join(describe(o, inner) for o in operands) + ")"
        case Equal(left=left, right=right):
            tail = " IS NULL" if right == NULL_LITERAL else " = " + describe(right, inner)
            return "(" + describe(left, inner) + tail + ")"
        case Compare(op=op, left=left, right=right):
            return f"({describe(left, inner)} {op} {describe(right, inner)})"
        case In(prop=prop, values=values, negated=negated):
            listed = ", ".join(describe(Literal(v, Kind.STRING)) for v in sorted(values))
            return f"({prop.name} {'NOT IN' if negated else 'IN'} ({listed}))"
    raise AssertionError(node)
