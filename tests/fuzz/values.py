"""Hostile values for header fields, and the header fields of every request code a server
serves (pure: no I/O).

Every field of every typed header class (remoting/headers.py, acl/protocol.py) gets each value
below: the ends of Java's int and long and one past them, numbers no 64 bits hold, digit strings
past CPython's int-to-str limit, NaN and infinities as text, empty and very long strings,
non-ASCII, NUL, and names that are paths out of the store (relative, absolute into the test's
own world, and through %RETRY%/%DLQ%). Which class a code decodes is learnt from the server's
own refusal of an empty header ("bad SendMessageRequestHeaderV2: b (topic) is missing"), so the
table follows the processors without a list kept by hand.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from acl import protocol as acl_headers
from remoting import headers
from remoting.codes import RequestCode as C
from remoting.header_codec import FieldSpec, field_specs
from remoting.wire_types import Length, OneOf, Range, check_value

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

NUMBERS = [
    0, -1, 1, INT_MIN, INT_MIN - 1, INT_MAX, INT_MAX + 1, LONG_MIN, LONG_MIN - 1, LONG_MAX,
    LONG_MAX + 1, 2**64, 2**70, -(2**70), 0x10, 0x20, 0x301, 0x40, 0x80,
]  # fmt: skip
TEXTS = [
    "", " ", "9" * 30, "9" * 400, "1" + "0" * 5000, "NaN", "nan", "Infinity", "-Infinity",
    "inf", "1e400", "1.5", "-0", "+1", " 7", "0x10", "1_000", "\u0663", "true", "TRUE",
    "false", "null", "x" * 300, "x" * 70_000, "é", "中文", "\U0001f600", "\x00", "a\x00b",
    "\n", "\\", '"', "\u2028", "\ufeff1", "SINGLE_TAG", "MULTI_TAG", "T" * 128, "T" * 256,
    "G" * 256, "%RETRY%", "%DLQ%", "%RETRY%" + "G" * 250,
]  # fmt: skip


def traversals(world: Path) -> list[str]:
    """Names that would leave a store under ``world`` if they reached a path."""
    return [
        "..", ".", "../x", "../../sentinel/victim", "../../../sentinel/empty", "/etc/passwd",
        f"{world}/sentinel/abs", f"{world}/sentinel/empty", "%RETRY%../../sentinel",
        "%DLQ%..", "a/b", "..\\..\\x", "x/../../../escape", "\x00../x",
    ]  # fmt: skip


def hostile_values(world: Path) -> list[str]:
    return [str(n) for n in NUMBERS] + TEXTS + traversals(world)


@attrs.frozen
class HeaderClass:
    """One typed header and its fields, with a value for each that every check passes."""

    cls: type
    specs: tuple[FieldSpec, ...]
    plain: dict[str, str]

    def out_of_range(self, wire: str, raw: str, *, rocketmq: bool = False) -> bool:
        """Whether the decoder must refuse ``raw`` in field ``wire`` (a ROCKETMQ header's empty
        value is no value: 4.9.x reads it as null)."""
        spec = next(s for s in self.specs if s.wire == wire)
        if raw == "" and (rocketmq or spec.blank_is_absent):
            return spec.required
        if spec.base is str and not spec.marks:
            return False
        return check_value(spec.base, spec.marks, raw)[1] is not None


def plain_value(spec: FieldSpec, topic: str, group: str) -> str:
    """A value every field of that type takes: names are the fuzz topic and group, so the
    processors go past their look-ups."""
    for mark in spec.marks:
        if isinstance(mark, OneOf):
            return sorted(mark.choices)[0]
        if isinstance(mark, Range):
            return str(max(mark.low, min(1, mark.high)))
        if isinstance(mark, Length):
            return "N"
    if spec.base is bool:
        return "false"
    if spec.base is not str:
        return "0"
    return group if "group" in spec.wire.lower() or spec.wire == "a" else topic


def request_header_classes() -> dict[str, type]:
    """Every typed request header by class name."""
    out = {}
    for module in (headers, acl_headers):
        for name, value in vars(module).items():
            if attrs.has(value) and name.endswith("Header") and "Response" not in name:
                out[name] = value
    return out


def header_class(cls: type, topic: str, group: str, known: dict[str, str]) -> HeaderClass:
    specs = tuple(field_specs(cls))
    plain = {s.wire: known.get(s.wire) or plain_value(s, topic, group) for s in specs}
    return HeaderClass(cls, specs, plain)


_ASCII_INTEGER = re.compile(r"-?[0-9]{1,400}")
_BAD_HEADER = re.compile(r"\bbad (\w+): ")


def class_from_refusal(remark: str | None, classes: dict[str, type]) -> type | None:
    """The header class a server named when it refused an empty header."""
    match = _BAD_HEADER.search(remark or "")
    return classes.get(match.group(1)) if match else None


def union_class(classes: list[type], topic: str, group: str, known: dict[str, str]) -> HeaderClass:
    """Fields of several classes at once: for a code whose class the server did not name (all
    its fields are optional), every field it might read."""
    specs: dict[str, FieldSpec] = {}
    for cls in classes:
        for spec in field_specs(cls):
            specs.setdefault(spec.wire, spec)
    ordered = tuple(specs.values())
    plain = {s.wire: known.get(s.wire) or plain_value(s, topic, group) for s in ordered}
    return HeaderClass(object, ordered, plain)


def all_field_optional(cls: type) -> bool:
    return not any(s.required for s in field_specs(cls))


# Codes that change or drop the topic or group they name: given names of their own, so that
# a perm of 0 or a deletion does not stop every later case at the first check.
ADMIN_CODES = frozenset({
    C.UPDATE_AND_CREATE_TOPIC, C.DELETE_TOPIC_IN_BROKER, C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    C.DELETE_SUBSCRIPTIONGROUP, C.INVOKE_BROKER_TO_RESET_OFFSET, C.CLONE_GROUP_OFFSET,
})  # fmt: skip
ADMIN_TOPIC, ADMIN_GROUP = "FuzzAdminT", "FuzzAdminG"


def field_table(
    discovered: dict[int, type | None], topic: str, group: str, known: dict[str, str]
) -> dict[int, HeaderClass]:
    """Code -> the header fields to fuzz. Codes with no named class get every field of the
    classes no code was found to decode (their fields are all optional, or the code reads
    none). ``known``: plain values by wire name that point at something real (the offset of
    a stored message, its id)."""
    classes = request_header_classes()
    named = {cls for cls in discovered.values() if cls is not None}
    unnamed = [c for c in classes.values() if c not in named and all_field_optional(c)]
    fallback = union_class(unnamed, topic, group, known)
    out = {}
    for code, cls in discovered.items():
        if cls is None:
            out[code] = fallback
        elif code in ADMIN_CODES:
            out[code] = header_class(cls, ADMIN_TOPIC, ADMIN_GROUP, known)
        else:
            out[code] = header_class(cls, topic, group, known)
    return out


def as_json_number(raw: str) -> Any:
    """The value as C++ would send it (a JSON number) where it is one, else the string."""
    return int(raw) if _ASCII_INTEGER.fullmatch(raw) else raw
