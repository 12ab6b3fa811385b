"""decode_command against hostile headers: every one is a RemoteProtocolError (the connection
closes with one WARNING line), never RecursionError, OverflowError or ValueError (a traceback
per frame), and never a command that fails later when its reply is encoded."""

from __future__ import annotations

import pytest

from remoting.command import decode_command
from remoting.errors import RemoteProtocolError
from remoting.frame import Frame

DEEP = 100_000

HOSTILE_JSON_HEADERS = {
    "deep-arrays": b'{"code":1,"extFields":' + b"[" * DEEP + b"]" * DEEP + b"}",
    "deep-objects": b'{"code":1,"x":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
    "deep-unclosed": b"[" * DEEP,
    "deep-fastjson": b'{"code":1,"extFields":{0:' + b"[" * 3000 + b"]" * 3000 + b"}}",
    "int-past-64-bits": b'{"code":123456789012345678901234567890,"opaque":1}',
    "long-code": b'{"code":9223372036854775807}',
    "opaque-past-int": b'{"code":1,"opaque":4294967296}',
    "flag-below-int": b'{"code":1,"flag":-2147483649}',
    "version-as-text-past-int": b'{"code":1,"version":"99999999999"}',
    "int-past-4300-digits": b'{"code":1' + b"0" * 5000 + b"}",
    "ext-int-past-4300-digits": b'{"code":1,"extFields":{"a":1' + b"0" * 5000 + b"}}",
    "infinity": b'{"code":Infinity}',
    "nan": b'{"code":NaN}',
    "float-overflow": b'{"code":1e400}',
    "bad-utf-8": b'{"code":1,"remark":"\xff\xfe"}',
    "lone-surrogate": b'{"code":1,"extFields":{"topic":"\\ud800"}}',
    "lone-surrogate-lenient": b'{"code":1,"extFields":{"topic":"\\udfff"},0:1}',
    "code-is-a-list": b'{"code":[1]}',
    "no-code": b'{"opaque":1}',
    "not-an-object": b"[1,2]",
    "empty": b"",
}


@pytest.mark.parametrize(
    "header", list(HOSTILE_JSON_HEADERS.values()), ids=list(HOSTILE_JSON_HEADERS)
)
def test_a_hostile_json_header_is_a_protocol_error(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_command(Frame(0, header, b""))


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b'{"code":-2147483648,"opaque":2147483647,"flag":-1}', (-(2**31), 2**31 - 1, -1)),
        (b'{"code":"12","opaque":"3","flag":2}', (12, 3, 2)),  # lenient peers' strings
        (b'{"code":10.0,"opaque":1}', (10, 1, 0)),
    ],
)
def test_java_ints_in_any_spelling_are_read(header: bytes, expected: tuple[int, int, int]) -> None:
    command = decode_command(Frame(0, header, b""))
    assert (command.code, command.opaque, command.flag) == expected


@pytest.mark.parametrize(
    "number", ["-9223372036854775809", "-9223372036854776833", "18446744073709551617", "1" * 30]
)
def test_an_integer_past_64_bits_in_ext_fields_is_read_exactly(number: str) -> None:
    # orjson reads these as floats: -2^63 - 1 came out as -2^63, a valid Java long (fuzzer)
    header = b'{"code":29,"extFields":{"timestamp":%s,"ratio":0.5}}' % number.encode()
    command = decode_command(Frame(0, header, b""))
    assert command.ext_fields == {"timestamp": number, "ratio": "0.5"}


@pytest.mark.parametrize(
    "key", [b"0", b"-7", b"99999999999999999999"], ids=["zero", "negative", "past-64-bits"]
)
def test_an_unquoted_numeric_ext_fields_key_is_a_string_key(key: bytes) -> None:
    # fastjson's dialect: Java reads {3:"x"} into its Map<String,String> as "3". The lenient
    # parser gave an int key, and the UTF-8 check then raised AttributeError (hypothesis)
    header = b'{"code":15,"extFields":{"consumerGroup":"G",%s:"3"},"opaque":3}' % key
    command = decode_command(Frame(0, header, b""))
    assert command.ext_fields == {"consumerGroup": "G", key.decode(): "3"}
