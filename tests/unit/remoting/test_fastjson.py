"""The fastjson dialect: what Java RocketMQ writes is read, and what we write reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remoting import fastjson
from remoting.errors import RemoteProtocolError


def test_bare_integer_keys_as_fastjson_writes_broker_addrs() -> None:
    text = '{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"b"}'
    assert fastjson.loads(text) == {
        "brokerAddrs": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
        "brokerName": "b",
    }


def test_object_keys_as_fastjson_writes_message_queue_maps() -> None:
    text = '{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:{"brokerOffset":9}}}'
    ((key, value),) = fastjson.loads(text)["offsetTable"].items()
    assert isinstance(key, fastjson.ObjectKey)
    assert dict(key) == {"brokerName": "b", "queueId": 3, "topic": "T"}
    assert value == {"brokerOffset": 9}


def test_a_trailing_newline_and_surrounding_whitespace_are_accepted() -> None:
    assert fastjson.loads(b'{"a":1}\n') == {"a": 1}
    assert fastjson.loads('  {0:"x"}\r\n') == {0: "x"}


@pytest.mark.parametrize("bad", ["{", '{"a":}', "{0:}", '{"a":1} x', b"\xff\xfe", "[1,,2]", ""])
def test_what_is_not_json_even_to_fastjson_raises_a_protocol_error(bad) -> None:
    with pytest.raises(RemoteProtocolError):
        fastjson.loads(bad)


DEEP = 100_000


@pytest.mark.parametrize(
    "bad",
    [
        "[" * DEEP + "]" * DEEP,  # the C parser's RecursionError
        '{"a":' * DEEP + "1" + "}" * DEEP,
        "{0:" + "[" * 500 + "]" * 500 + "}",  # fastjson's dialect: our own parser, bounded
        "[" * DEEP,
        "1" + "0" * 5000,  # past Python's int digits limit: ValueError
        "{0:1" + "0" * 5000 + "}",
        "NaN",
        "[Infinity]",
        "-Infinity",
        '{{0:1,"a":2}:3}',  # an object key whose names cannot be ordered
        '{{"a":[1]}:3}',  # nor hashed
        '{{"a":{"b":1}}:1}',
    ],
    ids=[
        "deep-arrays",
        "deep-objects",
        "deep-fastjson",
        "deep-unclosed",
        "huge-int",
        "huge-int-fastjson",
        "nan",
        "infinity",
        "minus-infinity",
        "object-key-mixed-names",
        "object-key-list-value",
        "object-key-object-value",
    ],
)
def test_hostile_text_raises_the_protocol_error_and_nothing_else(bad: str) -> None:
    with pytest.raises(fastjson.FastjsonDecodeError):
        fastjson.loads(bad)


def test_nesting_up_to_the_bound_is_read() -> None:
    depth = fastjson.MAX_DEPTH
    assert fastjson.loads("{0:" + "[" * (depth - 1) + "]" * (depth - 1) + "}") is not None


def test_writing_is_compact_with_native_or_standard_non_string_keys() -> None:
    value = {"brokerAddrs": {0: "a:1"}, "skip": None, "on": True}
    assert fastjson.dumps(value) == '{"brokerAddrs":{0:"a:1"},"on":true}'
    assert fastjson.dumps(value, standard=True) == '{"brokerAddrs":{"0":"a:1"},"on":true}'
    key = fastjson.ObjectKey((("brokerName", "b"), ("queueId", 0), ("topic", "T")))
    assert fastjson.dumps({key: 5}) == '{{"brokerName":"b","queueId":0,"topic":"T"}:5}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(0, 99), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(value=json_values)
def test_what_we_write_reads_back(value) -> None:
    def without_null_values(v):
        if isinstance(v, dict):
            return {k: without_null_values(i) for k, i in v.items() if i is not None}
        if isinstance(v, list):
            return [without_null_values(i) for i in v]
        return v

    assert fastjson.loads(fastjson.dumps(value)) == without_null_values(value)


def test_a_lone_surrogate_escape_is_refused_a_pair_is_one_character() -> None:
    # Not UTF-8: a reply quoting it could not be encoded (found by the fuzzer, tests/fuzz).
    for text in ('{"a":"\\ud800"}', '["x","\\udfff"]', '{"\\uDBFF":1}', '{0:"\\ud800"}'):
        with pytest.raises(fastjson.FastjsonDecodeError, match="lone surrogate"):
            fastjson.loads(text.encode())
    assert fastjson.loads(b'{"a":"\\ud83d\\ude00","b":"\\\\ud800"}') == {
        "a": "\U0001f600",
        "b": "\\ud800",
    }
