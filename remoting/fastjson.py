"""The JSON dialect of fastjson, the library Java RocketMQ serializes with (docs/spec/remoting.md §6).

Reading: strict JSON first (the C parser, fast), and on failure a small tolerant recursive-descent
parser that also accepts what fastjson writes for maps whose keys are not strings: bare integer
keys (``{0:"10.0.0.1:10911"}``) and object keys (``{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}``).
An object key is returned as an :class:`ObjectKey`, a hashable tuple of its sorted pairs.
Whatever the input, the only error is :class:`FastjsonDecodeError`: nesting is bounded
(``MAX_DEPTH``), and ``NaN``/``Infinity`` (not JSON, and not written by fastjson) or numbers
past Python's 4300-digit limit are refused rather than raising their own errors.

Writing: compact, no whitespace (Go clients split route JSON on ``,`` and ``:``), non-string keys
either fastjson-native (unquoted) or "standard" (quoted, as the 4.9.4+ NameServer's
BrowserCompatible mode writes them), enums by name, and fastjson's tab-indented "pretty" form
for config files.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from typing import Any

from remoting.errors import RemoteProtocolError

# RocketMQ's bodies nest a handful of levels; the C parser gives up near the interpreter's
# recursion limit (~1000), so anything deeper is refused by the tolerant one here.
MAX_DEPTH = 200


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_encode_str = json.encoder.encode_basestring  # type: ignore[attr-defined]
_strict_loads = json.JSONDecoder(strict=False, parse_constant=_no_constants).decode
_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class FastjsonDecodeError(RemoteProtocolError):
    """Text that is not JSON, even by fastjson's looser rules."""


def loads(text: str | bytes | bytearray | memoryview) -> Any:
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FastjsonDecodeError(f"not UTF-8: {exc}") from None
    try:
        return _utf8_only(text, _strict_loads(text.strip(_WHITESPACE)))
    except json.JSONDecodeError:
        pass  # maybe fastjson's own dialect
    except RecursionError:
        raise FastjsonDecodeError(f"invalid JSON: nested deeper than {MAX_DEPTH}") from None
    except ValueError as exc:  # NaN/Infinity, an integer past 4300 digits
        raise FastjsonDecodeError(f"invalid JSON: {exc}") from None
    parser = _Parser(text)
    try:
        value = parser.value()
    except RecursionError:  # only if called from deep down already: MAX_DEPTH stops ours
        raise FastjsonDecodeError(f"invalid JSON: nested deeper than {MAX_DEPTH}") from None
    parser.skip_ws()
    if parser.pos != len(text):
        parser.fail("trailing characters")
    return _utf8_only(text, value)


def _utf8_only(text: str, value: Any) -> Any:
    """``value``, unless an escape made a lone surrogate of one of its strings: text that is
    not UTF-8, which a reply quoting it could not even be encoded with (the Java side would
    read '?')."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return value
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise FastjsonDecodeError("invalid JSON: a lone surrogate escape") from None
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


class ObjectKey(tuple):
    """A JSON object that can be a map key (fastjson writes ``Map<MessageQueue, X>`` this way).

    A tuple of ``(name, value)`` pairs sorted by name; written as a JSON object wherever it
    appears, and returned by ``loads`` for every object used as a key.
    """

    __slots__ = ()

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> ObjectKey:
        return cls(sorted(fields.items()))

    def as_dict(self) -> dict[str, Any]:
        return dict(self)


class _Parser:
    __slots__ = ("depth", "pos", "text")

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.depth = text, 0, 0

    def fail(self, what: str) -> None:
        raise FastjsonDecodeError(f"invalid JSON at char {self.pos}: {what}")

    def skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos

    def value(self) -> Any:
        self.skip_ws()
        if self.pos >= len(self.text):
            self.fail("unexpected end")
        char = self.text[self.pos]
        if char in "{[":
            if self.depth >= MAX_DEPTH:
                self.fail(f"nested deeper than {MAX_DEPTH}")
            self.depth += 1
            value = self.obj() if char == "{" else self.array()
            self.depth -= 1
            return value
        if char == '"':
            return self.string()
        if char == "-" or char.isdigit():
            return self.number()
        for literal, result in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(literal, self.pos):
                self.pos += len(literal)
                return result
        self.fail(f"unexpected {char!r}")
        return None  # unreachable

    def obj(self) -> dict[Any, Any]:
        self.pos += 1  # "{"
        out: dict[Any, Any] = {}
        self.skip_ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return out
        while True:
            key = self.value()
            if isinstance(key, dict):
                try:  # names of one type, values that can be in a map key themselves
                    key = ObjectKey.of(key)
                    hash(key)
                except TypeError:
                    self.fail("object key that cannot be a map key")
            elif isinstance(key, list):
                self.fail("array as object key")
            self.skip_ws()
            if not self.text.startswith(":", self.pos):
                self.fail("expected ':'")
            self.pos += 1
            out[key] = self.value()
            self.skip_ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return out
            self.fail("expected ',' or '}'")

    def array(self) -> list[Any]:
        self.pos += 1  # "["
        out: list[Any] = []
        self.skip_ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.skip_ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return out
            self.fail("expected ',' or ']'")

    def string(self) -> str:
        text = self.text
        pos = self.pos + 1
        parts: list[str] = []
        while True:
            end = pos
            while end < len(text) and text[end] not in '"\\':
                end += 1
            if end >= len(text):
                self.pos = end
                self.fail("unterminated string")
            parts.append(text[pos:end])
            if text[end] == '"':
                self.pos = end + 1
                return "".join(parts)
            escape = text[end + 1 : end + 2]
            if escape == "u":
                digits = text[end + 2 : end + 6]
                if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    self.pos = end
                    self.fail("bad \\u escape")
                parts.append(chr(int(digits, 16)))
                pos = end + 6
            elif escape in _ESCAPES:
                parts.append(_ESCAPES[escape])
                pos = end + 2
            else:
                self.pos = end
                self.fail("bad escape")

    def number(self) -> int | float:
        text, start = self.text, self.pos
        end = start
        while end < len(text) and text[end] in _NUMBER_CHARS:
            end += 1
        token = text[start:end]
        self.pos = end
        try:
            if any(c in token for c in ".eE"):
                return float(token)
            return int(token)
        except ValueError:
            self.pos = start
            self.fail(f"bad number {token!r}")
            return 0  # unreachable


def dumps(value: Any, *, standard: bool = False, pretty: bool = False) -> str:
    """fastjson's ``toJSONString``: compact, or tab-indented like RocketMQ's config files.

    ``standard`` quotes non-string map keys (BrowserCompatible mode); otherwise integers are
    written bare and object keys (``Mapping`` or tuple-of-pairs) as inline JSON objects.
    """
    out: list[str] = []
    _write(out, value, standard, "\n" if pretty else "")
    return "".join(out)


def _write(out: list[str], value: Any, standard: bool, newline: str) -> None:
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, enum.Enum):
        out.append(_encode_str(value.name))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(repr(value))
    elif isinstance(value, Mapping):
        _write_mapping(out, value, standard, newline)
    elif isinstance(value, ObjectKey):
        _write_mapping(out, dict(value), standard, newline)
    elif isinstance(value, list | tuple | set | frozenset):
        _write_sequence(out, value, standard, newline)
    else:
        raise TypeError(f"cannot serialize {type(value).__name__} as fastjson")


def _write_mapping(out: list[str], value: Mapping[Any, Any], standard: bool, newline: str) -> None:
    if not value:
        out.append("{}")
        return
    inner = newline + "\t" if newline else ""
    out.append("{")
    first = True
    for key, item in value.items():
        if item is None:  # fastjson omits null properties and null map values
            continue
        if not first:
            out.append(",")
        first = False
        out.append(inner)
        _write_key(out, key, standard)
        out.append(":")
        _write(out, item, standard, inner)
    out.append(newline + "}")


def _write_key(out: list[str], key: Any, standard: bool) -> None:
    if isinstance(key, str):
        out.append(_encode_str(key))
        return
    if isinstance(key, ObjectKey):
        key = dict(key)
    rendered = dumps(key, standard=standard)
    out.append(_encode_str(rendered) if standard else rendered)


def _write_sequence(out: list[str], value: Any, standard: bool, newline: str) -> None:
    if not value:
        out.append("[]")
        return
    inner = newline + "\t" if newline else ""
    out.append("[")
    for index, item in enumerate(value):
        if index:
            out.append(",")
        out.append(inner)
        _write(out, item, standard, inner)
    out.append(newline + "]")
