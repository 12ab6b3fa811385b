"""One event, one log line: control characters from the wire are escaped in the message, a
traceback keeps its lines (found by the fuzzer, tests/fuzz)."""

from __future__ import annotations

import logging
import sys

from remoting.log_format import OneLineFormatter, one_line
from remoting.logs import FORMAT


def test_control_characters_are_escaped_and_text_is_kept() -> None:
    assert one_line("plain é 中 \t tab") == "plain é 中 \t tab"
    assert one_line("a\nb\r\x00c\x1b[31m\x7f\u2028") == "a\\nb\\r\\x00c\\x1b[31m\\x7f\\u2028"


def test_a_forged_line_stays_inside_the_message_and_a_traceback_keeps_its_lines() -> None:
    forged = "x\n2026-01-01 00:00:00,000 ERROR namesrv: Traceback (most recent call last):"
    record = logging.LogRecord("n", logging.INFO, __file__, 1, "KV config put: %s", (forged,), None)
    assert "\n" not in OneLineFormatter(FORMAT).format(record)
    try:
        raise ValueError("ours")
    except ValueError:
        failed = logging.LogRecord("n", logging.ERROR, __file__, 1, "bug", (), sys.exc_info())
    lines = OneLineFormatter(FORMAT).format(failed).splitlines()
    assert lines[0].endswith("ERROR n: bug") and lines[1].startswith("Traceback")
