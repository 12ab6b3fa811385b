"""Message filters for PULL_MESSAGE: Java's ExpressionMessageFilter and
ExpressionForRetryMessageFilter.

A filter answers twice per message: on the ConsumeQueue unit (the tag's hash code, before the
CommitLog is touched) and, for SQL92 only, on the stored record's properties. Tags never need
the second step; SQL92 passes every unit (we keep no bloom-filter bitmap) and decides on the
properties, which are read straight out of the record without decoding the rest.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache

from broker.filter import FilterSyntaxError, compile_sql92
from broker.store.types import TagsFilter
from remoting import constants as K
from remoting import message as codec
from remoting.java_hash import java_string_hash
from remoting.message import MessageConst
from remoting.record import SYS_FLAG_POS, record_size

TAG_TYPES = (None, "", "TAG")
SQL92 = "SQL92"

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
# Where the body starts, by (born host is IPv6, store host is IPv6): the fixed fields before it.
_BODY_AT = {
    (born6, store6): record_size(0, 0, 0, born_v6=born6, store_v6=store6) - 3
    for born6 in (False, True)
    for store6 in (False, True)
}


def record_properties(record: memoryview) -> dict[str, str]:
    """The properties of one stored record (already checked when it was stored)."""
    (sys_flag,) = _I32.unpack_from(record, SYS_FLAG_POS)
    body_at = _BODY_AT[
        bool(sys_flag & codec.BORNHOST_V6_FLAG), bool(sys_flag & codec.STOREHOSTADDRESS_V6_FLAG)
    ]
    (body_length,) = _I32.unpack_from(record, body_at - 4)
    topic_at = body_at + body_length
    props_at = topic_at + 1 + record[topic_at]
    (length,) = _I16.unpack_from(record, props_at)
    text = str(record[props_at + 2 : props_at + 2 + length], "utf-8", "replace")
    return codec.string_to_properties(text)


@lru_cache(maxsize=4096)
def tags_filter(sub_string: str | None) -> TagsFilter:
    """FilterAPI.buildSubscriptionData for TAG expressions: ``*`` or blank is everything,
    else the ``||``-separated tags' hash codes. Cached: most clients send it on every pull."""
    if sub_string is None or not sub_string.strip() or sub_string.strip() == "*":
        return TagsFilter(None)
    tags = [t.strip() for t in sub_string.split("||") if t.strip()]
    if not tags:
        raise ValueError(f"subscription {sub_string!r} names no tag")
    return TagsFilter(frozenset(java_string_hash(t) for t in tags))


class ExpressionMessageFilter:
    """A SQL92 subscription: only a message whose properties make it TRUE is delivered."""

    __slots__ = ("expression",)

    def __init__(self, expression: str) -> None:
        self.expression = compile_sql92(expression)

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return True

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        return self.expression.matches(record_properties(record))


class RetryMessageFilter:
    """filterSupportRetry: a retry topic holds messages of every topic the group consumes, so
    each is judged by the group's SQL92 subscription to its original topic (RETRY_TOPIC), if
    that subscription is SQL92; the retry topic's own (tag) subscription judges the units."""

    __slots__ = ("expression_of", "tags")

    def __init__(self, tags: TagsFilter, expression_of: Callable[[str], str | None]) -> None:
        self.tags = tags
        self.expression_of = expression_of

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.tags.is_matched_by_consume_queue(tags_code)

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        properties = record_properties(record)
        expression = self.expression_of(properties.get(MessageConst.RETRY_TOPIC, ""))
        return expression is None or compile_sql92(expression).matches(properties)


def expression_problem(expression: str | None, expression_type: str | None) -> str | None:
    """Why a non-tag subscription cannot be used, or None."""
    if expression_type != SQL92:
        return f"unknown expression type {expression_type}"
    try:
        compile_sql92(expression or "")
    except FilterSyntaxError as exc:
        return str(exc)
    return None


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX)
