"""The Java type of every header field, as the range a value must be in before anything uses
it (docs/spec/remoting.md §3.3, §9).

A header field is annotated with one of the aliases below (``queue_offset: Long``); the header
decoder (remoting.header_codec) checks each value against its marks, once, so a processor only ever
sees values a Java broker could hold: an ``int`` within 32 bits, a ``long`` within 64, a name
that is one path component, an enum's name. Java's own decoder throws NumberFormatException for
a number out of its type's range, which its remoting layer answers with SYSTEM_ERROR; so do we,
naming the field and the value.

Pure: no I/O. ``check_value`` is the reference the compiled decoders of remoting.header_codec
are held to; ``value_problem`` also checks request bodies (serde.check_body).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import attrs

from remoting import names

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# Ours (Java has none): queues per topic. Admin and stats requests walk every queue of a
# topic, so 2^31 of them would hold the event loop for minutes; BenchmarkTest has 1024.
QUEUE_NUMS_MAX = 65_536
# MessageSysFlag bits a client decides (4.9.8): COMPRESSED 0x1, MULTI_TAGS 0x2, the transaction
# type 0xC, the compression type 0x700 (a 4.9.4+ Java client sends 0x301 for a zlib body). The
# store's layout bits (born host IPv6 0x10, store host IPv6 0x20) follow the real addresses, and
# NEED_UNWRAP 0x40 / INNER_BATCH 0x80 (defined in 4.9.8, read only by 5.x's store and clients)
# are the store's too: the broker clears them all.
CLIENT_SYS_FLAG_BITS = 0x1 | 0x2 | 0xC | 0x700


@attrs.frozen
class Range:
    """An integer field: inclusive bounds, and how the remark calls them."""

    low: int
    high: int
    what: str


@attrs.frozen
class Bits:
    """An integer bit set of which only ``mask`` is kept (the rest is the broker's to set)."""

    mask: int


@attrs.frozen
class Name:
    """A topic or group name: ``problem`` says why a value is not one (remoting.names)."""

    problem: Callable[[str], str | None]
    # the valid names already seen, which the compiled decoders look up before calling problem
    seen: set[str] = attrs.field(eq=False)


@attrs.frozen
class OneOf:
    """A Java enum sent by name."""

    choices: frozenset[str]


@attrs.frozen
class Length:
    """A string's length in characters, inclusive bounds."""

    low: int
    high: int


Int = Annotated[int, Range(INT_MIN, INT_MAX, "Java int")]
Long = Annotated[int, Range(LONG_MIN, LONG_MAX, "Java long")]
NonNegInt = Annotated[int, Range(0, INT_MAX, "a Java int >= 0")]
NonNegLong = Annotated[int, Range(0, LONG_MAX, "a Java long >= 0")]
QueueNums = Annotated[int, Range(1, QUEUE_NUMS_MAX, "queue numbers")]
RetryQueueNums = Annotated[int, Range(0, QUEUE_NUMS_MAX, "retry queue numbers")]  # 0: no retry
# A topic a broker registers may have no queues of a kind (an operator draining it).
RegisteredQueueNums = Annotated[int, Range(0, QUEUE_NUMS_MAX, "queue numbers")]
Perm = Annotated[int, Range(0, 0xF, "PermName bits")]  # PRIORITY 8 | READ 4 | WRITE 2 | INHERIT 1
SendSysFlag = Annotated[int, Range(INT_MIN, INT_MAX, "Java int"), Bits(CLIENT_SYS_FLAG_BITS)]
Topic = Annotated[str, Name(names.topic_problem, names.valid_topics)]
Group = Annotated[str, Name(names.group_problem, names.valid_groups)]
TopicFilterTypeName = Annotated[str, OneOf(frozenset({"SINGLE_TAG", "MULTI_TAG"}))]
# KV config namespaces and keys (ours: Java takes any string): ORDER_TOPIC_CONFIG's keys are
# topics, PROJECT_CONFIG's are addresses.
KVName = Annotated[str, Length(1, 255)]

MARKS = (Range, Bits, Name, OneOf, Length)


def show(raw: Any) -> str:
    """A value for a remark: as Python writes it (strings quoted), cut short: it came from the
    wire and may be megabytes."""
    text = repr(raw)
    return text if len(text) <= 66 else text[:60] + "..."


def check_value(base: type, marks: tuple[Any, ...], raw: str) -> tuple[Any, str | None]:
    """``raw`` as its field's value, or why it cannot be one: the reference decoder."""
    if base is str:
        value: Any = raw
    elif base is bool:
        return raw.lower() == "true", None  # Boolean.parseBoolean: never an error
    elif base is int:
        try:
            value = int(raw)
        except ValueError:
            return None, f"{show(raw)} is not a number"
    elif base is float:
        try:
            value = float(raw)
        except ValueError:
            return None, f"{show(raw)} is not a number"
    else:
        raise TypeError(f"no header type {base!r}")
    problem = value_problem(marks, value, raw)
    if problem is not None:
        return None, problem
    for mark in marks:
        if isinstance(mark, Bits):
            value &= mark.mask
    return value, None


def value_problem(marks: tuple[Any, ...], value: Any, raw: Any = None) -> str | None:
    """Why a parsed value breaks one of its field's marks (``raw``: what the peer sent)."""
    raw = value if raw is None else raw
    for mark in marks:
        if isinstance(mark, Range):
            if not isinstance(value, int) or not mark.low <= value <= mark.high:
                return f"{show(raw)} is out of the range of {mark.what} [{mark.low}, {mark.high}]"
        elif isinstance(mark, Name):
            problem = mark.problem(value) if isinstance(value, str) else "not a string"
            if problem is not None:
                return f"{show(raw)}: {problem}"
        elif isinstance(mark, OneOf):
            if value not in mark.choices:
                return f"{show(raw)} is not one of {', '.join(sorted(mark.choices))}"
        elif isinstance(mark, Length) and not mark.low <= len(value) <= mark.high:
            return f"{show(raw)} is not {mark.low} to {mark.high} characters long"
    return None
