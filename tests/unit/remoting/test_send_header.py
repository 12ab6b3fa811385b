"""SEND_MESSAGE(_V2)'s header and the property string: the C twins (remoting/native/codec/
send_header.c) against the pure-Python references on hostile input. Same header, or the same
RocketMQ response code and remark, for every value; never a crash."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import message
from remoting.codec_native import native
from remoting.errors import RequestError
from remoting.headers import SendMessageRequestHeader
from remoting.names import valid_topics
from remoting.send_header import _native_decode_send_header, python_decode_send_header
from tests.kits.nativekit import needs_codec

V1_KEYS = [
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "batch",
    "maxReconsumeTimes", "bname",
]  # fmt: skip
V2_KEYS = list("abcdefghijkmln")  # the same fields, in SendMessageRequestHeader's order
PLAIN = [
    "PG",
    "BenchTopic",
    "TBW102",
    "4",
    "1",
    "0",
    "1700000000000",
    "0",
    "KEYS\x01k\x02TAGS\x01TagA\x02WAIT\x01true",
    "0",
    "false",
    "false",
    "16",
    "broker-a",
]

EDGE_NUMBERS = [
    "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "+7", "-0",
    "007", " 7", "7 ", "1_000", "", "-", "+", "0x10", "1e3", "\u0661\u0662", "12\x00",
    "99999999999999999999",
]  # fmt: skip
# "\uff54rue": a fullwidth t; "\u0130".lower() is two characters
EDGE_WORDS = [
    "true", "TRUE", "tRuE", "false", "", "yes", "\uff54rue", "BenchTopic", "TBW102", "a/b", "..",
    "%RETRY%G", "x" * 300, "t\ud800", "\u0130", "Topic-\u00fc",
]  # fmt: skip
numbers = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from(EDGE_NUMBERS),
)
words = st.one_of(
    st.sampled_from(EDGE_WORDS),
    st.text(max_size=12),
)
values: st.SearchStrategy[Any] = st.one_of(
    numbers, words, st.sampled_from([None, 7, True, 1.5, b"4", ["x"]])
)


def outcome(decode: Any, ext: Any, v2: bool) -> Any:
    try:
        return decode(ext, v2)
    except RequestError as exc:
        return ("refused", exc.code, exc.remark)


@needs_codec
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    v2=st.booleans(),
    changes=st.dictionaries(st.integers(0, 13), values, max_size=4),
    missing=st.sets(st.integers(0, 13), max_size=2),
)
@example(v2=True, changes={}, missing=set())
@example(v2=True, changes={3: "2147483648"}, missing=set())
@example(v2=False, changes={5: "-1"}, missing=set())
@example(v2=True, changes={10: "TRUE", 11: "\uff54rue"}, missing=set())
@example(v2=True, changes={1: "a/b"}, missing=set())
def test_native_header_equals_the_reference(
    v2: bool, changes: dict[int, Any], missing: set[int]
) -> None:
    keys = V2_KEYS if v2 else V1_KEYS
    ext: dict[str, Any] = {}
    for index, key in enumerate(keys):
        value = changes.get(index, PLAIN[index])
        if index not in missing and value is not None:
            ext[key] = value
    ext["zExtra"] = "ignored"
    expected = outcome(python_decode_send_header, dict(ext), v2)
    assert outcome(_native_decode_send_header, dict(ext), v2) == expected


@needs_codec
@pytest.mark.parametrize("v2", [True, False])
def test_native_takes_the_plain_header_itself(v2: bool) -> None:
    """The fast path is used for what clients send (else it would be dead code)."""
    python_decode_send_header(dict(zip(V2_KEYS, PLAIN, strict=True)), True)  # topics known
    ext = dict(zip(V2_KEYS if v2 else V1_KEYS, PLAIN, strict=True))
    values = native.decode_send_header(ext, v2, valid_topics)
    assert values is not None
    assert SendMessageRequestHeader(*values) == python_decode_send_header(ext, v2)
    ext["f" if v2 else "sysFlag"] = str(0x7FFFFFFF)  # only the client's bits are kept
    assert native.decode_send_header(ext, v2, valid_topics)[5] == 0x70F


@needs_codec
def test_native_header_defers_an_unknown_topic_to_the_name_check() -> None:
    ext = dict(zip(V2_KEYS, PLAIN, strict=True))
    ext["b"] = "NeverSeenTopic-7f3a"
    assert native.decode_send_header(ext, True, set()) is None
    assert python_decode_send_header(ext, True).topic == "NeverSeenTopic-7f3a"


property_text = st.text(
    alphabet=st.sampled_from(["\x01", "\x02", "a", "b", "\x00", "é", "\U0001f600", "="]),
    max_size=40,
)


@needs_codec
@given(text=st.one_of(property_text, st.text(max_size=40)))
@example(text="\x02\x01v\x02k\x01\x02k\x01v\x01w\x02\x02a\x01b\x02a\x01c\x02")
@example(text="k\x01\ud800\x02\udfff\x01x")
def test_native_properties_equal_the_reference(text: str) -> None:
    assert native.string_to_properties(text) == message.python_string_to_properties(text)


@pytest.mark.parametrize(
    "parse",
    [message.python_string_to_properties, pytest.param("native", marks=needs_codec)],
)
def test_properties_as_java_reads_them(parse: Any) -> None:
    parse = native.string_to_properties if parse == "native" else parse
    assert parse(None) == parse("") == {}
    text = "\x02\x01v\x02k\x01\x02k\x01v\x01w\x02\x02a\x01b\x02a\x01c\x02"
    assert parse(text) == {"k": "v\x01w", "a": "c"}


@needs_codec
def test_native_refuses_what_is_not_its_input() -> None:
    with pytest.raises(TypeError):
        native.string_to_properties(b"k\x01v")
    with pytest.raises(TypeError):
        native.decode_send_header([], True, set())
