"""Recursive-descent parser for RocketMQ 4.9.x's selector grammar (SelectorParser.jj).

Precedence, loosest first: OR; AND; = <> IS [NOT] NULL; > >= < <= [NOT] BETWEEN [NOT] IN;
then the prefix operators + - NOT, which bind tightest of all: `NOT a = 'x'` is
`(NOT a) = 'x'`, exactly as in Java. The grammar's start rule does not end with <EOF>, so once
a complete expression has been read the rest of the text is ignored (see lexer.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec

from broker.filter import rules
from broker.filter.errors import FilterSyntaxError
from broker.filter.lexer import Lexer, Token, TokenKind, string_value
from broker.filter.nodes import NULL_LITERAL, Kind, Literal, Negate, Node, Not, Property, depth

P = ParamSpec("P")

# Java has no limit but its thread stack; ours keeps the parser, the closure builder and the
# evaluation far inside Python's recursion limit, even when called from deep in the broker.
MAX_DEPTH = 50

_ORDERING = {TokenKind.GT: ">", TokenKind.GE: ">=", TokenKind.LT: "<", TokenKind.LE: "<="}
_COMPARISON_START = {*_ORDERING, TokenKind.BETWEEN, TokenKind.IN, TokenKind.NOT}
_EQUALITY_START = {TokenKind.EQ, TokenKind.NE, TokenKind.IS}
_BOOLEAN_LITERALS = {TokenKind.TRUE: True, TokenKind.FALSE: False}


def parse(text: str) -> Node:
    """The expression's tree, already checked the way RocketMQ checks it."""
    node = _Parser(text).selector()
    if depth(node) > MAX_DEPTH:
        raise FilterSyntaxError(f"expression nests more than {MAX_DEPTH} levels deep")
    return node


class _Parser:
    def __init__(self, text: str) -> None:
        self._lexer = Lexer(text)
        self._ahead: list[Token] = []  # lexed but not consumed: at most two, as in JavaCC
        self._nesting = 0

    # -- token plumbing -------------------------------------------------------------------

    def _peek(self, index: int = 0) -> Token:
        while len(self._ahead) <= index:
            self._ahead.append(self._lexer.next_token())
        return self._ahead[index]

    def _take(self) -> Token:
        token = self._peek()
        del self._ahead[0]
        return token

    def _expect(self, kind: TokenKind, context: str) -> Token:
        token = self._peek()
        if token.kind is not kind:
            wanted = "a string literal" if kind is TokenKind.STRING else repr(kind.value)
            raise _unexpected(token, f"expected {wanted} {context}")
        return self._take()

    # -- grammar, one method per production of SelectorParser.jj --------------------------

    def selector(self) -> Node:
        first = self._peek()
        return _at(first, rules.as_boolean, self._or())

    def _or(self) -> Node:
        left = self._and()
        while self._peek().kind is TokenKind.OR:
            operator = self._take()
            left = _at(operator, rules.or_, left, self._and())
        return left

    def _and(self) -> Node:
        left = self._equality()
        while self._peek().kind is TokenKind.AND:
            operator = self._take()
            left = _at(operator, rules.and_, left, self._equality())
        return left

    def _equality(self) -> Node:
        left = self._comparison()
        while self._peek().kind in _EQUALITY_START:
            operator = self._take()
            if operator.kind is TokenKind.EQ:
                left = _at(operator, rules.equal, left, self._comparison())
            elif operator.kind is TokenKind.NE:
                left = _at(operator, rules.not_equal, left, self._comparison())
            elif self._peek().kind is TokenKind.NULL:
                self._take()
                left = rules.is_null(left)
            else:
                self._expect(TokenKind.NOT, "or 'NULL' after IS")
                self._expect(TokenKind.NULL, "after IS NOT")
                left = rules.is_not_null(left)
        return left

    def _comparison(self) -> Node:
        left = self._unary()
        while (operator := self._peek()).kind in _COMPARISON_START:
            negated = operator.kind is TokenKind.NOT
            if negated and self._peek(1).kind not in (TokenKind.BETWEEN, TokenKind.IN):
                raise _unexpected(self._peek(1), "expected BETWEEN or IN after NOT")
            self._take()
            keyword = self._take() if negated else operator
            if keyword.kind in _ORDERING:
                left = _at(operator, rules.compare, _ORDERING[keyword.kind], left, self._unary())
            elif keyword.kind is TokenKind.BETWEEN:
                left = self._between(operator, left, negated=negated)
            else:
                values = self._string_list()
                left = _at(operator, rules.in_list, left, values, negated=negated)
        return left

    def _between(self, operator: Token, value: Node, *, negated: bool) -> Node:
        low = self._unary()
        self._expect(TokenKind.AND, "between the BETWEEN bounds")
        high = self._unary()
        build = rules.not_between if negated else rules.between
        return _at(operator, build, value, low, high)

    def _string_list(self) -> list[str]:
        """IN takes string literals only: not numbers, not NULL, and at least one."""
        self._expect(TokenKind.LPAREN, "after IN")
        values = [self._in_list_item()]
        while self._peek().kind is TokenKind.COMMA:
            self._take()
            values.append(self._in_list_item())
        self._expect(TokenKind.RPAREN, "to close the IN list")
        return values

    def _in_list_item(self) -> str:
        return string_value(self._expect(TokenKind.STRING, "in the IN list (strings only)"))

    def _unary(self) -> Node:
        token = self._peek()
        self._nesting += 1
        if self._nesting > MAX_DEPTH:
            raise FilterSyntaxError(f"expression nests more than {MAX_DEPTH} levels deep")
        try:
            if token.kind is TokenKind.PLUS:  # a no-op, as in Java
                self._take()
                return self._unary()
            if token.kind is TokenKind.MINUS:
                self._take()
                return Negate(self._unary())
            if token.kind is TokenKind.NOT:
                self._take()
                return Not(_at(token, rules.as_boolean, self._unary()))
            return self._primary()
        finally:
            self._nesting -= 1

    def _primary(self) -> Node:
        token = self._take()
        kind = token.kind
        if kind is TokenKind.STRING:
            return Literal(string_value(token), Kind.STRING)
        if kind is TokenKind.DECIMAL:
            return _at(token, rules.integer_literal, token.text)
        if kind is TokenKind.FLOAT:
            return _at(token, rules.float_literal, token.text)
        if kind in _BOOLEAN_LITERALS:
            return Literal(_BOOLEAN_LITERALS[kind], Kind.BOOLEAN)
        if kind is TokenKind.NULL:
            return NULL_LITERAL
        if kind is TokenKind.ID:
            return Property(token.text)
        if kind is TokenKind.LPAREN:
            inner = self._or()
            self._expect(TokenKind.RPAREN, f"to close the '(' at position {token.pos + 1}")
            return inner
        raise _unexpected(token, "expected a value, a property name or '('")


def _at(token: Token, build: Callable[P, Node], *args: P.args, **kwargs: P.kwargs) -> Node:
    """Run a rules.* builder, saying where in the text its refusal applies."""
    try:
        return build(*args, **kwargs)
    except FilterSyntaxError as exc:
        raise FilterSyntaxError(
            f"{exc} (at position {token.pos + 1}, {token.describe()})"
        ) from None


def _unexpected(token: Token, expectation: str) -> FilterSyntaxError:
    return FilterSyntaxError(f"{expectation}, found {token.describe()} at position {token.pos + 1}")
