"""Tokens of RocketMQ's SQL92 selector language (filter/.../parser/SelectorParser.jj, 4.9.x).

The lexer is lazy on purpose: JavaCC only lexes as far as the parser looks ahead, and RocketMQ's
grammar never asks for end-of-input, so text after a complete expression is ignored unless the
parser had to peek at a token that cannot be lexed (`a = 1 #` fails, `a = 1 x #` parses).
"""

from __future__ import annotations

import enum
import re

import attrs

from broker.filter.errors import FilterSyntaxError


class TokenKind(enum.Enum):
    NOT = "NOT"
    AND = "AND"
    OR = "OR"
    BETWEEN = "BETWEEN"
    IN = "IN"
    TRUE = "TRUE"
    FALSE = "FALSE"
    NULL = "NULL"
    IS = "IS"
    DECIMAL = "integer literal"
    FLOAT = "floating-point literal"
    STRING = "string literal"
    ID = "property name"
    EQ = "="
    NE = "<>"
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    PLUS = "+"
    MINUS = "-"
    EOF = "end of expression"


# 4.9.x has no CONTAINS / STARTSWITH / ENDSWITH (5.x added them); here they are property names.
_KEYWORD_KINDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
KEYWORDS = {name: TokenKind[name] for name in _KEYWORD_KINDS}  # matched case-insensitively
_OPERATOR_KINDS = ("EQ", "NE", "GT", "GE", "LT", "LE", "LPAREN", "RPAREN", "COMMA", "PLUS", "MINUS")
OPERATORS = {TokenKind[name].value: TokenKind[name] for name in _OPERATOR_KINDS}

# Whitespace is exactly these five characters (U+00A0 and friends are lexical errors). A `--`
# comment needs its line break: without one, `--5` is two minus signs.
_SKIP = re.compile(r"(?:[ \t\n\r\f]+|--[^\n\r]*(?:\r\n|\n|\r)|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)*")
# Ordered so the first alternative that matches is also JavaCC's longest match: a float always
# outruns the integer it starts with (`01.5` is one float, `01` is `0` then `1`), and `L` may
# only follow a non-zero integer (`0L` is `0` then the property `L`).
_TOKEN = re.compile(
    r"(?P<FLOAT>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    r"|[0-9]+[eE][+-]?[0-9]+)"
    r"|(?P<DECIMAL>0|[1-9][0-9]*[lL]?)"
    r"|(?P<STRING>'(?:[^']|'')*')"
    r"|(?P<ID>[A-Za-z_$][A-Za-z0-9_$]*)"  # ASCII only: no Unicode case folding (U+017F is an error)
    r"|(?P<OP><>|<=|>=|[=<>(),+\-])"
)


@attrs.frozen
class Token:
    kind: TokenKind
    text: str
    pos: int  # 0-based index into the expression text

    def describe(self) -> str:
        return self.kind.value if self.kind is TokenKind.EOF else repr(self.text)


class Lexer:
    """Hands out one token per call; raises FilterSyntaxError where JavaCC's TokenMgrError would."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0

    def next_token(self) -> Token:
        text = self._text
        pos = _SKIP.match(text, self._pos).end()
        if pos == len(text):
            self._pos = pos
            return Token(TokenKind.EOF, "", pos)
        match = _TOKEN.match(text, pos)
        if match is None:
            raise FilterSyntaxError(_lexical_problem(text, pos))
        self._pos = match.end()
        group = match.lastgroup
        lexeme = match.group()
        if group == "ID":
            kind = KEYWORDS.get(lexeme.upper(), TokenKind.ID)
        elif group == "OP":
            kind = OPERATORS[lexeme]
        else:
            kind = TokenKind[group]
        return Token(kind, lexeme, pos)


def _lexical_problem(text: str, pos: int) -> str:
    if text[pos] == "'":
        return f"unterminated string literal starting at position {pos + 1}"
    if text.startswith("/*", pos):
        return f"unterminated /* comment starting at position {pos + 1}"
    return f"unexpected character {text[pos]!r} at position {pos + 1}"


def string_value(token: Token) -> str:
    """The text between the quotes, with each doubled quote read as one."""
    return token.text[1:-1].replace("''", "'")
