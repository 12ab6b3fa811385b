"""Custom headers' plain form in C (remoting/native/codec/plain_header.c, through
header_codec.plain_decoder) against the reference, header_codec.decode_header, on hostile
extFields: the same header, or the same RocketMQ response code and remark, for every value of
every header class the C can take (PULL_MESSAGE's first); never a crash."""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import header_codec, headers
from remoting.codec_native import native
from remoting.errors import RequestError
from remoting.header_codec import decode_header, plain_decoder, plain_fields
from remoting.headers import PullMessageRequestHeader
from remoting.names import valid_groups, valid_topics
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_send_header import EDGE_NUMBERS, EDGE_WORDS

PLAIN_CLASSES = [
    cls
    for _, cls in inspect.getmembers(headers, inspect.isclass)
    if attrs.has(cls) and cls.__module__ == headers.__name__ and plain_fields(cls) is not None
]
PULL = {
    "consumerGroup": "G",
    "topic": "T",
    "queueId": "1",
    "queueOffset": "0",
    "maxMsgNums": "32",
    "sysFlag": "6",
    "commitOffset": "0",
    "suspendTimeoutMillis": "20000",
    "subVersion": "1700000000000",
    "subscription": "*",
    "expressionType": "TAG",
}
values: st.SearchStrategy[Any] = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from(EDGE_NUMBERS + EDGE_WORDS + ["G", "T"]),
    st.text(max_size=12),
    st.sampled_from([None, 7, True, 1.5, b"4", ["x"]]),
)


def outcome(decode: Any, ext: Any) -> Any:
    try:
        return decode(ext)
    except RequestError as exc:
        return ("refused", exc.code, exc.remark)


def ext_of(cls: type, changes: dict[int, Any], missing: set[int]) -> dict[str, Any]:
    """A plain header of ``cls`` with some values replaced and some keys dropped."""
    specs = header_codec.field_specs(cls)
    ext = {s.wire: PULL.get(s.wire, "7" if s.base is int else "G") for s in specs}
    for index, value in changes.items():
        ext[specs[index % len(specs)].wire] = value
    for index in missing:
        ext.pop(specs[index % len(specs)].wire, None)
    return ext


def test_the_pull_header_is_plain() -> None:
    assert PullMessageRequestHeader in PLAIN_CLASSES


@needs_codec
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cls=st.sampled_from(PLAIN_CLASSES),
    changes=st.dictionaries(st.integers(0, 31), values, max_size=4),
    missing=st.sets(st.integers(0, 31), max_size=2),
    extra=st.dictionaries(st.text(max_size=6), values, max_size=2),
)
@example(cls=PullMessageRequestHeader, changes={}, missing=set(), extra={})
@example(cls=PullMessageRequestHeader, changes={2: "2147483648"}, missing=set(), extra={})
@example(cls=PullMessageRequestHeader, changes={3: " 7"}, missing=set(), extra={})
@example(cls=PullMessageRequestHeader, changes={0: "a/b"}, missing=set(), extra={})
@example(cls=PullMessageRequestHeader, changes={1: 7}, missing={4}, extra={})
def test_native_equals_the_reference(cls, changes, missing, extra) -> None:
    ext = ext_of(cls, changes, missing) | extra
    fast = plain_decoder(cls)
    expected = outcome(lambda e: decode_header(cls, e), ext)
    assert outcome(fast, ext) == expected
    assert outcome(fast, dict(ext)) == expected  # now that the names are remembered


@needs_codec
def test_native_takes_a_plain_pull_itself() -> None:
    """The C builds the plain header (not the reference after a None)."""
    fields = plain_fields(PullMessageRequestHeader)
    valid_topics.add("T")
    valid_groups.add("G")
    values = native.decode_plain_header(dict(PULL), fields)
    assert PullMessageRequestHeader(*values) == decode_header(PullMessageRequestHeader, PULL)
    assert native.decode_plain_header(dict(PULL, queueId="1 "), fields) is None
    assert native.decode_plain_header(dict(PULL, topic="Unseen-Topic-Name"), fields) is None


@needs_codec
@pytest.mark.parametrize(
    "fields",
    [((), ()), (("k", 2, True, 0, 0, None, None),), (("k", 9, True, 0, 0, None, None),), ("k",)],
)
def test_native_refuses_a_bad_field_table(fields: Any) -> None:
    """A table header_codec never makes raises (TypeError/ValueError), it never crashes."""
    with pytest.raises((TypeError, ValueError)):
        native.decode_plain_header({"k": "1"}, fields)
