"""The servers' log line format (docs/STYLE.md §8): one event, one line.

Log messages quote values that came from the wire (KV namespaces and keys, client ids, broker
names, remarks). Written as they are, a newline in one splits the line and lets any client
forge log lines of its own, an ERROR or a traceback among them (found by the fuzzer,
tests/fuzz). The formatter escapes control characters in the message (``\\n``, ``\\x00``); a
traceback, appended after the message, keeps its own lines.
"""

from __future__ import annotations

import logging
import re

# C0 controls but tab, DEL, and the line breaks Unicode adds (NEL, LINE/PARAGRAPH SEPARATOR)
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def one_line(text: str) -> str:
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


class OneLineFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = one_line(record.message)
        return super().formatMessage(record)
