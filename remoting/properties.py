"""Java ``.properties`` files (java.util.Properties.load), as RocketMQ's ``broker.conf`` and
``namesrv.conf`` are written: ``#``/``!`` comments, ``key=value``, ``key: value`` or
``key value``, backslash line continuations, and escapes including ``\\uXXXX``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    pass


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending = (pending or "") + line[:-1]
            continue
        lines.append((start, (pending or "") + line))
        pending = None
    if pending is not None:
        lines.append((start, pending))
    return lines


def _unescape(text: str, line: int) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"line {line}: malformed \\uxxxx escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def loads(text: str) -> dict[str, str]:
    """Later keys win, as in Java. Values keep their trailing spaces (Java does too); the
    config loaders strip them."""
    out: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split(line)
        out[_unescape(key, number)] = _unescape(value, number)
    return out


def _decode(raw: bytes) -> str:
    # Java reads .properties as ISO-8859-1 with \u escapes; UTF-8 files are what operators
    # write today, and plain ASCII reads the same either way.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def load(path: str | Path) -> dict[str, str]:
    return loads(_decode(Path(path).read_bytes()))


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _escape(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\f", "\\f")
    )


def with_changes(text: str, changes: Mapping[str, str]) -> str:
    """``text`` with each changed key's entry replaced in place (appended when absent); every
    other line, comment and continuation kept. A key given twice keeps its first place, once."""
    pending = dict(changes)
    out: list[str] = []
    continuing = replacing = False  # a continuation line, of an entry being replaced
    for line in text.splitlines():
        if continuing:
            continuing = _continues(line)
            if not replacing:
                out.append(line)
            continue
        entry = line.lstrip(" \t\f")
        if not entry or entry[0] in "#!":  # comments never continue
            out.append(line)
            continue
        key = _split(entry)[0]
        continuing, replacing = _continues(line), key in changes
        if not replacing:
            out.append(line)
        elif key in pending:
            out.append(f"{key}={_escape(pending.pop(key))}")
    out.extend(f"{key}={_escape(value)}" for key, value in pending.items())
    return "\n".join(out) + "\n"


def dumps(properties: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in properties.items())
