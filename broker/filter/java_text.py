"""Reading a property's text as Java's Integer/Long/Double/Boolean.valueOf would.

ComparisonExpression converts a String property to the type of the other side, with exactly
these methods; a NumberFormatException aborts the whole evaluation (FilterEvaluationError).
Python's own int()/float() accept more (spaces, underscores, "nan"), so the shapes are checked
first.
"""

from __future__ import annotations

import re

from broker.filter.errors import FilterEvaluationError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

# Double.valueOf trims every char <= U+0020 (controls included), then takes one of: NaN or
# Infinity (exact case, no suffix), a decimal with an optional f/F/d/D suffix, or a hex float
# whose binary exponent is mandatory. Digits are ASCII only, unlike Integer.valueOf's.
_TRIM = "".join(chr(c) for c in range(0x21))
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_SPECIAL = re.compile(r"([+-]?)(NaN|Infinity)")
_HEX = re.compile(
    r"([+-]?)(0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?"
)


def parse_int(text: str) -> int:
    """Integer.valueOf: an optional sign and decimal digits (any Unicode Nd digit, as Java's
    Character.digit), within 32 bits."""
    value = int(text) if text.isdecimal() else _parse_signed(text)  # the first is the hot path
    if not INT_MIN <= value <= INT_MAX:
        raise FilterEvaluationError(f"{text!r} is out of range for a Java int")
    return value


def parse_long(text: str) -> int:
    value = int(text) if text.isdecimal() else _parse_signed(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise FilterEvaluationError(f"{text!r} is out of range for a Java long")
    return value


def _parse_signed(text: str) -> int:
    # isdecimal() is exactly Unicode Nd, Java's digits; int() alone would also allow spaces and _.
    if text[:1] in ("+", "-") and text[1:].isdecimal():
        return int(text)
    raise FilterEvaluationError(f"{text!r} is not a Java integer")


def parse_double(text: str) -> float:
    trimmed = text.strip(_TRIM)
    if _DECIMAL.fullmatch(trimmed):
        return float(trimmed.rstrip("fFdD"))
    if special := _SPECIAL.fullmatch(trimmed):
        return float(special.group(1) + ("nan" if special.group(2) == "NaN" else "inf"))
    if hexadecimal := _HEX.fullmatch(trimmed):
        try:
            return float.fromhex(hexadecimal.group(1) + hexadecimal.group(2))
        except OverflowError:  # Java rounds a too-large hex float to infinity
            return float("-inf" if hexadecimal.group(1) == "-" else "inf")
    raise FilterEvaluationError(f"{text!r} is not a Java double")


def parse_boolean(text: str) -> bool:
    """Boolean.valueOf never fails: "true" in any case is true, anything else false."""
    return text.lower() == "true"
