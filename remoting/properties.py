"""Java ``.properties`` files (java.util.Properties.load), as RocketMQ's ``broker.conf`` and
``namesrv.conf`` are written: ``#``/``!`` comments, ``key=value``, ``key: value`` or
``key value``, backslash line continuations, and escapes including ``\\uXXXX``."""

from __future__ import annotations

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


def load(path: str | Path) -> dict[str, str]:
    # Java reads .properties as ISO-8859-1 with \u escapes; UTF-8 files are what operators
    # write today, and plain ASCII reads the same either way.
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return loads(text)


def dumps(properties: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in properties.items())
