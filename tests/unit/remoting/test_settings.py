"""Config keys as typed, bounded values (remoting/settings.py): every numeric key of broker.conf
and namesrv.conf has a range, text parses by Java's rules, and a refusal names the key, the
text and the reason."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from broker.config import BrokerConfig, resolve_types
from broker.store.config import MessageStoreConfig
from namesrv.config import NamesrvConfig
from remoting.settings import (
    LONG_MAX,
    LONG_MIN,
    ConfigError,
    Range,
    directory_problem,
    file_problem,
    read_fields,
)

CLASSES = (BrokerConfig, MessageStoreConfig, NamesrvConfig)


def _ranges(attribute: attrs.Attribute) -> list[Range]:
    validator = attribute.validator
    parts = getattr(validator, "_validators", (validator,))
    return [v for v in parts if isinstance(v, Range)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_numeric_key_has_a_range_within_java_long(cls) -> None:
    resolve_types()
    attrs.resolve_types(NamesrvConfig)
    for attribute in attrs.fields(cls):
        if attribute.type not in (int, float):
            continue
        ranges = _ranges(attribute)
        assert ranges, f"{cls.__name__}.{attribute.name} has no Range"
        for r in ranges:
            assert LONG_MIN <= r.lo <= r.hi <= LONG_MAX, attribute.name
            assert r.lo <= attribute.default <= r.hi, attribute.name


def _read(cls: type, key: str, text: str):
    values, _ = read_fields((cls,), {key: text}, frozenset())
    return values[cls]


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12), (" 12 ", 12), ("+12", 12), ("0012", 12), ("2147483647", 2**31 - 1)],
)
def test_integers_parse_as_java_does(text, value) -> None:
    resolve_types()
    assert _read(MessageStoreConfig, "maxMessageSize", text) == {"max_message_size": value}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1_000", "expected an integer"),
        (
            "٣",
            "expected an integer",
        ),  # Python's int() takes other scripts' digits; Java's too, we don't
        ("0x10", "expected an integer"),
        ("1e3", "expected an integer"),
        ("", "expected an integer"),
        ("2147483648", "between 1 and 2147483647"),
        ("99999999999999999999", "between 1 and 2147483647"),
        ("9" * 5000, "between 1 and 2147483647"),
        ("0", "between 1 and 2147483647"),
    ],
)
def test_a_bad_integer_is_refused_with_its_key_text_and_reason(text, reason) -> None:
    resolve_types()
    with pytest.raises(ConfigError) as refused:
        _read(MessageStoreConfig, "maxMessageSize", text)
    message = str(refused.value)
    assert message.startswith("bad value for maxMessageSize=") and reason in message
    assert len(message) < 200  # one line: a 5000-digit value is not echoed whole


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-Infinity", "1e400", "0", "1.5", "x"])
def test_a_ratio_must_be_a_finite_number_in_range(text) -> None:
    resolve_types()
    with pytest.raises(ConfigError, match="diskSpaceWarningLevelRatio"):
        _read(MessageStoreConfig, "diskSpaceWarningLevelRatio", text)


def test_an_optional_key_left_empty_is_unset() -> None:
    resolve_types()
    assert _read(BrokerConfig, "brokerIP2", "") == {"broker_ip2": None}
    assert _read(BrokerConfig, "logFile", " ") == {"log_file": None}


def test_a_directory_must_be_creatable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert directory_problem(tmp_path / "a" / "b") is None
    assert directory_problem(tmp_path) is None
    assert (
        directory_problem(tmp_path / "file" / "store") == f"{tmp_path / 'file'} is not a directory"
    )
    assert directory_problem(tmp_path / "file") == f"{tmp_path / 'file'} is not a directory"
    assert file_problem(tmp_path) == f"{tmp_path} is a directory"
    assert file_problem(tmp_path / "file") is None
