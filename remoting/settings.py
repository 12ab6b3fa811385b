"""Config keys as typed, bounded values (docs/STYLE.md §9): the one place ``broker.conf`` and
``namesrv.conf`` text becomes values, shared by start-up and by the admin updates
(UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG).

Each key is a field of a frozen attrs class; its Python type says how the text parses (Java's
rules: ``int``/``long`` digits only, ``true``/``false``, enum names) and its validator says what
range it may take. A value out of range never reaches a running service: it is refused naming
the key, the text and the reason. Java's own bounds are the floor (an ``int`` field never holds
more than 2^31 - 1); fields whose value ends up in a file layout, a mapping or a frame get the
tighter bound that layout needs.
"""

from __future__ import annotations

import enum
import ipaddress
import math
import os
import re
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from remoting.names import TOPIC_MAX_LENGTH, topic_problem

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

_INTEGER = re.compile(r"[+-]?[0-9]+")  # Integer.parseInt/Long.parseLong, ASCII digits
_BOOLS = {"true": True, "false": False}
# A broker's and a cluster's name become topics (directory names under consumequeue/): the
# topic charset plus '.', for host names, which are the default broker names.
_NAME = re.compile(r"[%|a-zA-Z0-9_.-]+")


class ConfigError(ValueError):
    """A config value that cannot be used: the message names key, value and reason."""


_ECHO_CHARS = 80  # a refusal is one line: a longer value is shown by its start and length


def bad_value(key: str, text: object, reason: str) -> ConfigError:
    shown = str(text)
    if len(shown) > _ECHO_CHARS:
        shown = f"{shown[:_ECHO_CHARS]}...' ({len(shown)} characters)"
        return ConfigError(f"bad value for {key}='{shown}: {reason}")
    return ConfigError(f"bad value for {key}={shown!r}: {reason}")


@attrs.frozen
class Range:
    """An attrs validator: ``lo <= value <= hi``. Every numeric key has one."""

    lo: int | float
    hi: int | float

    def __call__(self, _: object, attribute: attrs.Attribute, value: int | float) -> None:
        if not self.lo <= value <= self.hi:
            raise ValueError(f"must be between {self.lo} and {self.hi}")


def java_int(lo: int = 0, hi: int = INT_MAX) -> Range:
    assert INT_MIN <= lo <= hi <= INT_MAX
    return Range(lo, hi)


def java_long(lo: int = 0, hi: int = LONG_MAX) -> Range:
    assert LONG_MIN <= lo <= hi <= LONG_MAX
    return Range(lo, hi)


PORT = Range(0, 65535)


def topic_name(_: object, attribute: attrs.Attribute, value: str) -> None:
    problem = topic_problem(value)
    if problem is not None:
        raise ValueError(problem)


def node_name(_: object, attribute: attrs.Attribute, value: str) -> None:
    if len(value) > TOPIC_MAX_LENGTH or not _NAME.fullmatch(value) or value in (".", ".."):
        raise ValueError(
            f"must be 1-{TOPIC_MAX_LENGTH} characters of [%|a-zA-Z0-9_.-], not . or .. "
            "(it names a topic, and a topic names a directory)"
        )


def ip_address(_: object, attribute: attrs.Attribute, value: str | None) -> None:
    if value is None:
        return
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise ValueError("must be an IPv4 or IPv6 address") from None


def address_problem(text: str) -> str | None:
    """Why ``host:port`` is not an address a client can dial (Java's string2SocketAddress)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host.strip("[]") or not port.isdecimal() or not 0 < int(port) <= 65535:
        return f"{text!r} is not host:port with a port 1-65535"
    return None


def address_list(_: object, attribute: attrs.Attribute, value: str | None) -> None:
    """``host:port;host:port`` (namesrvAddr); empty entries are ignored, as in Java."""
    for entry in (value or "").split(";"):
        problem = address_problem(entry.strip()) if entry.strip() else None
        if problem is not None:
            raise ValueError(f'{problem}; expected "127.0.0.1:9876;192.168.0.1:9876"')


def optional_address(_: object, attribute: attrs.Attribute, value: str | None) -> None:
    if value:
        problem = address_problem(value)
        if problem is not None:
            raise ValueError(problem)


def directory_problem(path: Path) -> str | None:
    """Why ``path`` cannot be (or become) a directory we write in; None when it can. Looks at
    the filesystem, changes nothing: what is in the way, or a parent we may not write."""
    probe = path.absolute()
    while not os.path.lexists(probe):
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        where = "it" if probe == path.absolute() else f"{probe}"
        return f"cannot write in {where}: permission denied or a read-only filesystem"
    return None


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a file we (re)write; None when it can."""
    if path.is_dir():
        return f"{path} is a directory"
    return directory_problem(path.parent)


def wire_key(attribute: attrs.Attribute) -> str:
    """Field ``x_y`` is key ``xY`` unless its metadata names the key."""
    if "wire" in attribute.metadata:
        return attribute.metadata["wire"]
    head, *rest = attribute.name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def keyed_fields(cls: type) -> dict[str, attrs.Attribute]:
    return {wire_key(a): a for a in attrs.fields(cls)}


def _parse_int(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError("expected an integer")
    if len(text.lstrip("+-0")) > 19:  # beyond any long: not worth converting
        return LONG_MAX + 1 if text[0] != "-" else LONG_MIN - 1
    return int(text)


def _parse_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("expected a number") from None
    if not math.isfinite(value):
        raise ValueError("expected a finite number")
    return value


def _parse_enum(kind: type[enum.Enum], text: str) -> enum.Enum:
    try:
        return kind[text]
    except KeyError:
        raise ValueError(f"expected one of {', '.join(m.name for m in kind)}") from None


def _parse_bool(text: str) -> bool:
    try:
        return _BOOLS[text.lower()]
    except KeyError:
        raise ValueError("expected true or false") from None


def _base_type(kind: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed) of ``X`` or ``X | None``."""
    if isinstance(kind, types.UnionType):
        args = [a for a in kind.__args__ if a is not type(None)]
        return args[0], len(args) < len(kind.__args__)
    return kind, False


_PARSERS: dict[Any, Callable[[str], Any]] = {
    int: _parse_int,
    float: _parse_float,
    bool: _parse_bool,
    str: str,
    Path: Path,
}


def parse_value(attribute: attrs.Attribute, text: str) -> Any:
    """The field's value for ``text`` (stripped), checked by its validator; ValueError says
    why not. Empty text is None for an optional field."""
    kind, optional = _base_type(attribute.type)
    text = text.strip()
    if optional and not text:
        value = None
    elif kind is Path and not text:
        raise ValueError("must not be empty")
    elif isinstance(kind, type) and issubclass(kind, enum.Enum):
        value = _parse_enum(kind, text)
    else:
        value = _PARSERS[kind](text)
    if attribute.validator is not None:
        attribute.validator(None, attribute, value)
    if kind is int and value is not None and not LONG_MIN <= value <= LONG_MAX:  # a Java long
        raise ValueError(f"must be between {LONG_MIN} and {LONG_MAX}")
    return value


def read_fields(
    classes: Iterable[type], properties: Mapping[str, str], ignored: frozenset[str]
) -> tuple[dict[type, dict[str, Any]], list[str]]:
    """Each known key's checked value, by class and field name, and the unknown keys (not in
    ``ignored``). ConfigError names the first bad key."""
    keyed = [(cls, keyed_fields(cls)) for cls in classes]
    values: dict[type, dict[str, Any]] = {cls: {} for cls, _ in keyed}
    unknown = []
    for key, text in properties.items():
        for cls, fields in keyed:
            attribute = fields.get(key)
            if attribute is not None:
                try:
                    values[cls][attribute.name] = parse_value(attribute, text)
                except (ValueError, TypeError) as exc:
                    raise bad_value(key, text, str(exc)) from None
                break
        else:
            if key not in ignored:
                unknown.append(key)
    return values, unknown


def build(cls: type, values: Mapping[str, Any]) -> Any:
    """The config object; every value was checked by read_fields, and defaults are valid."""
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:  # a default that a validator refuses: our bug
        raise ConfigError(f"bad {cls.__name__}: {exc}") from None


def config_text(value: object) -> str:
    """A value as a properties file (and GET_*_CONFIG) shows it."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return ""
    return str(value)


def config_values(*configs: object) -> dict[str, str]:
    """Every key of ``configs`` with its value as config text (secrets included: not for
    showing)."""
    return {
        wire_key(attribute): config_text(getattr(config, attribute.name))
        for config in configs
        for attribute in attrs.fields(type(config))
    }
