"""Property text read as Java's Integer/Long/Double/Boolean.valueOf read it (shapes checked
against a JVM); Python's int()/float() alone would accept spaces, underscores and "nan"."""

from __future__ import annotations

import math

import pytest

from broker.filter.errors import FilterEvaluationError
from broker.filter.java_text import parse_boolean, parse_double, parse_int, parse_long


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 5), ("+5", 5), ("-5", -5), ("007", 7), ("\u0665", 5), ("2147483647", 2**31 - 1)],
)
def test_int_accepts_java_integer_text(text: str, value: int) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize(
    "text", ["", "+", "-", " 5", "5 ", "5_0", "5.0", "1e3", "0x10", "²", "2147483648"]
)
def test_int_refuses_what_integer_value_of_refuses(text: str) -> None:
    with pytest.raises(FilterEvaluationError):
        parse_int(text)


def test_long_is_the_same_with_64_bits() -> None:
    assert parse_long("-9223372036854775808") == -(2**63)
    with pytest.raises(FilterEvaluationError):
        parse_long("9223372036854775808")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.5", 1.5),
        ("5.", 5.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("1E-3", 0.001),
        ("1.5f", 1.5),
        ("2D", 2.0),
        ("\x01 2.5 \x1f", 2.5),
        ("-Infinity", -math.inf),
        ("0x1.4p2", 5.0),
        ("0x.8p1", 1.0),
        ("0x1p99999", math.inf),
        ("1e99999", math.inf),
        ("-0", -0.0),
    ],
)
def test_double_accepts_java_double_text(text: str, value: float) -> None:
    assert parse_double(text) == value


@pytest.mark.parametrize(
    "text", ["", ".", "1e", ".5e", "nan", "inf", "Infinityf", "0x1", "1.5\u00a0", "\u0665", "1_0"]
)
def test_double_refuses_what_double_value_of_refuses(text: str) -> None:
    with pytest.raises(FilterEvaluationError):
        parse_double(text)


def test_nan_is_read_as_nan() -> None:
    assert math.isnan(parse_double("NaN")) and math.isnan(parse_double("-NaN"))


def test_boolean_is_true_only_for_true_in_any_case() -> None:
    assert parse_boolean("true") and parse_boolean("TRUE") and parse_boolean("tRuE")
    assert not parse_boolean("yes") and not parse_boolean(" true") and not parse_boolean("")
