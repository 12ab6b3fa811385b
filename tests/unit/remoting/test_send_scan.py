"""The scan of a plain send's JSON header (remoting/native/codec/send_scan.c, through
remoting/command.py ScannedCommand) against the reference, today's orjson path: for every
header bytes, the same command fields, the same extFields when asked for, the same send header
values as decode_send_header gives on those extFields, the same plain rows, or the same
RemoteProtocolError. Inputs: the C++ client's real sends (tests/data/interop-frames), our
client's V2 frames and Java-form V1 frames, SEND_BATCH_MESSAGE headers as our client and the
peers harness (Java 4.9's form: keys sorted) write them, and their mutations (reordered and
duplicated keys, escapes, numbers for strings, big numbers, non-ASCII, whitespace, truncation,
stray bytes)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker.processor import send_plain
from remoting import command
from remoting.codec_native import native
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, ScannedCommand, encode_command_bytes
from remoting.errors import RemoteProtocolError
from remoting.frame import FrameDecoder
from tests.conftest import INTEROP_FRAMES
from tests.kits.nativekit import needs_codec

pytestmark = needs_codec

V1_KEYS = ("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
           "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
           "batch", "maxReconsumeTimes", "bname")  # fmt: skip
V2_KEYS = tuple("abcdefghijkmln")
HOST = (b"\x7f\x00\x00\x01", 40404)


def _header(frame_bytes: bytes) -> bytes:
    decoder = FrameDecoder()
    decoder.receive_data(frame_bytes)
    return decoder.next_frame().header


def header_bases(code: int, fields: dict[str, str], decode: Any) -> list[bytes]:
    """The JSON headers of our client's request of ``code`` with ``fields`` and of up to three
    the C++ client sent (INTEROP_FRAMES), each first read by the full path through ``decode``
    (the names seen valid, as after a first request)."""
    headers = [_header(encode_command_bytes(RemotingCommand.request(code, fields)))]
    for path in sorted(INTEROP_FRAMES.glob(f"cpp/*/*-in-{code}.bin"))[:3]:
        headers.append(_header(path.read_bytes()))
    for header in headers:
        decode(command._parse_json_header(header))
    return headers


def edited_ext(base: bytes, changes: list[tuple[str, Any]], dropped: list[str]) -> dict:
    """``base``'s header as JSON with extFields ``changes`` set and ``dropped`` removed."""
    data = json.loads(base)
    ext = data["extFields"]
    for key, value in changes:
        ext[key] = value
    for key in dropped:
        ext.pop(key, None)
    return data


def _ours(code: int, names: tuple[str, ...]) -> bytes:
    values = ["G", "T", "TBW102", "4", "1", "0", "1700000000000", "0",
              "TAGS\x01t\x02KEYS\x01k1 k2\x02WAIT\x01true\x02UNIQ_KEY\x01AB12\x02", "0",
              "false", "false", "16", "broker-a"]  # fmt: skip
    request = RemotingCommand.request(code, dict(zip(names, values, strict=True)), b"body")
    return _header(encode_command_bytes(request))


def _our_client_batch() -> bytes:
    """The header client/producer.py sends a batch with (``Producer._request``, batch=True)."""
    from remoting.header_codec import encode_header_fields
    from remoting.send_header import SendMessageRequestHeaderV2

    header = SendMessageRequestHeaderV2(
        a="G", b="T", c="TBW102", d=4, e=2, f=0, g=1700000000000, h=0, i="WAIT\x01true", j=0,
        k=False, m=True,
    )  # fmt: skip
    fields = encode_header_fields(header)
    return _header(encode_command_bytes(RemotingCommand.request(320, fields, b"body")))


def _java_batch() -> bytes:
    """A batch's header as Java 4.9's fastjson writes it (keys sorted, compact), as the peers
    harness sends it (/tmp/peers ours_bench.py Producer.batch)."""
    ext = dict(zip(V2_KEYS, ["G", "T", "TBW102", "8", "3", "0", "1700000000123", "0",
                             "WAIT\x01true", "0", "false", "true", "16", "broker-a"], strict=True))  # fmt: skip
    data = {"code": 320, "extFields": ext, "flag": 0, "language": "JAVA", "opaque": 7,
            "serializeTypeCurrentRPC": "JSON", "version": 409}  # fmt: skip
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def _cpp_sends() -> list[bytes]:
    headers = []
    for path in sorted(INTEROP_FRAMES.glob("cpp/*/*-in-*.bin")):
        header = _header(path.read_bytes())
        if json.loads(header)["code"] in SEND_CODES:
            headers.append(header)
    return headers


SEND_CODES = (10, 310, 320)
BASES = [_ours(310, V2_KEYS), _ours(10, V1_KEYS), *_cpp_sends()[:4]]  # the first has opaque 0
BATCHES = [_our_client_batch(), _java_batch()]
BASES += BATCHES


def reference(header: bytes) -> Any:
    """Today's path: the command, its extFields, decode_send_header's values on them."""
    try:
        cmd = command._parse_json_header(header, b"body")
    except RemoteProtocolError as exc:
        return ("refused", str(exc)), None
    fields = (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark,
              cmd.ext_fields, cmd.serialize_type)  # fmt: skip
    ext = cmd.ext_fields
    values = None
    if type(ext) is dict and cmd.code in SEND_CODES:
        # SEND_BATCH_MESSAGE's header is the V2 one, as Java's broker decodes it
        topics = {v for k, v in ext.items() if k in ("b", "c", "topic", "defaultTopic")}
        values = native.decode_send_header(ext, cmd.code != 10, topics)
    return fields, values


def scanned(header: bytes) -> Any:
    try:
        cmd = command._decode_json_header(header, b"body")
    except RemoteProtocolError as exc:
        return ("refused", str(exc)), None
    values = cmd.header_values
    fields = (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark,
              cmd.ext_fields, cmd.serialize_type)  # fmt: skip
    return fields, values


def rows(header: bytes, decode: Any) -> Any:
    try:
        cmd = decode(header, b"body")
    except RemoteProtocolError:
        return "refused"
    topics = {"T", "TopicCap", "TBW102", "G"}
    args = ([cmd], topics, lambda topic: 4, send_plain._SPECIAL, "C1", HOST)
    native_rows = native.plain_send_rows(*args)
    assert native_rows == send_plain.python_plain_rows(*args)
    return native_rows


def check(header: bytes) -> bool:
    """The scan agrees with the reference; True when it took the header."""
    fast_fields, fast_values = scanned(header)
    ref_fields, ref_values = reference(header)
    assert fast_fields == ref_fields
    took = fast_values is not None
    if took:
        # a scanned header is plain to the reference too, with the same values
        assert fast_values == ref_values
    assert rows(header, command._decode_json_header) == rows(header, command._parse_json_header)
    return took


def test_real_and_our_clients_sends_are_scanned() -> None:
    assert len(BASES) >= 3, f"expected the C++ captures under {INTEROP_FRAMES}"
    for header in BASES:
        assert check(header), header
        cmd = command._decode_json_header(header, b"")
        assert type(cmd) is ScannedCommand
        assert cmd.header_values is not None


def test_batches_are_scanned_as_v2_headers() -> None:
    """SEND_BATCH_MESSAGE: the scan's values are the V2 decode's, batch=true among them; a
    batch named in V1's keys is left to the reference (which refuses it, as Java's broker)."""
    for header in BATCHES:
        assert check(header), header
        cmd = command._decode_json_header(header, b"")
        assert cmd.code == RequestCode.SEND_BATCH_MESSAGE
        assert cmd.header_values[1] == "T" and cmd.header_values[11] is True
    v1_batch = _ours(10, V1_KEYS).replace(b'"code":10,', b'"code":320,')
    assert not check(v1_batch)


def test_extfields_are_made_only_when_asked_for() -> None:
    cmd = command._decode_json_header(BASES[0], b"")
    assert command._get_ext(cmd) is command._LAZY
    assert cmd.ext("b") == "T"
    assert command._get_ext(cmd) == command._parse_json_header(BASES[0]).ext_fields
    cmd.ext_fields = {"x": "y"}
    assert cmd.ext_fields == {"x": "y"}


def test_other_requests_are_not_scanned() -> None:
    pull = _header(encode_command_bytes(RemotingCommand.request(11, {"topic": "T"})))
    assert native.scan_send_command(pull, b"") is None
    assert type(command._decode_json_header(pull, b"")) is RemotingCommand


INTERESTING = [b"\\", b'"', b"\\u00", b"\\u0080", b"\\u007f", b"u", b"0", b"-", b"+", b" ",
               b"\n", b"\t", b",", b":", b"{", b"}", b"[", b"\x80", b"\xc3\xa9", b"\x00",
               b"\x7f", b"e", b".", b"9", b"1", b"true", b"null", b"\\n", b"\\/",
               b"\\\\", b"\\\"", b"\\U0041", b"99999999999999999999"]  # fmt: skip
edits = st.lists(
    st.tuples(
        st.sampled_from(["insert", "replace", "delete", "truncate"]),
        st.floats(0, 1),
        st.sampled_from(INTERESTING),
    ),
    min_size=1,
    max_size=3,
)


def _edit(header: bytes, ops: list[tuple[str, float, bytes]]) -> bytes:
    for op, where, data in ops:
        at = int(where * len(header))
        if op == "insert":
            header = header[:at] + data + header[at:]
        elif op == "replace":
            header = header[:at] + data + header[at + len(data) :]
        elif op == "delete":
            header = header[:at] + header[at + 1 :]
        else:
            header = header[:at]
    return header


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(base=st.sampled_from(BASES), ops=edits)
def test_byte_mutations_agree(base: bytes, ops: list[tuple[str, float, bytes]]) -> None:
    check(_edit(base, ops))


VALUES = st.one_of(
    st.sampled_from(["4", "0", "1", "T", "G", "1700000000001", "false", "KEYS\x01a\x02"]),
    st.integers(0, 3),
    st.text(st.characters(max_codepoint=0x7F), max_size=6),
    st.text(max_size=3),
    st.sampled_from(
        [
            "4",
            "-1",
            "+2",
            "007",
            " 1",
            "2147483648",
            "-2147483649",
            "9223372036854775808",
            "-9223372036854775808",
            "true",
            "TRUE",
            "tru\\e",
            "T",
            "TBW102",
            "TopicCap",
            "x y",
            "1e3",
        ]
    ),
    st.integers(-(2**65), 2**65),
    st.sampled_from([True, False, None, 1.5, 0.0, -0.0, [1], {"a": "b"}]),
)
TOP_VALUES = st.one_of(
    st.integers(-3, 2**32),
    st.sampled_from([10, 310, 310, 320, "310", 310.0, None, True, "JAVA", "CPP", "", "\u00e9"]),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    base=st.sampled_from(BASES),
    changes=st.lists(st.tuples(st.integers(0, 20), VALUES), max_size=2),
    top_changes=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "code",
                    "opaque",
                    "flag",
                    "version",
                    "language",
                    "remark",
                    "serializeTypeCurrentRPC",
                    "other",
                ]
            ),
            TOP_VALUES,
        ),
        max_size=1,
    ),
    order=st.randoms(use_true_random=False),
    ensure_ascii=st.booleans(),
    spaced=st.booleans(),
    duplicate=st.one_of(st.just(-1), st.just(-1), st.integers(0, 30)),
)
@example(base=BASES[0], changes=[], top_changes=[], order=None, ensure_ascii=True, spaced=True,
         duplicate=-1)  # fmt: skip
def test_json_mutations_agree(
    base: bytes,
    changes: list[tuple[int, Any]],
    top_changes: list[tuple[str, Any]],
    order: Any,
    ensure_ascii: bool,
    spaced: bool,
    duplicate: int,
) -> None:
    data = json.loads(base)
    ext = data["extFields"]
    keys = list(ext) + list(V2_KEYS) + list(V1_KEYS[:7])
    for index, value in changes:
        key = keys[index % len(keys)]
        if value is None and index % 2:
            ext.pop(key, None)
        else:
            ext[key] = value
    for key, value in top_changes:
        data[key] = value
    if order is not None:
        items = list(ext.items())
        order.shuffle(items)
        data["extFields"] = dict(items)
        top = list(data.items())
        order.shuffle(top)
        data = dict(top)
    separators = (", ", ": ") if spaced else (",", ":")
    text = json.dumps(data, ensure_ascii=ensure_ascii, separators=separators)
    if duplicate >= 0:  # a key written twice, maybe with another value: orjson keeps the last
        members = list(re.finditer(r'"([A-Za-z]+)"\s*:\s*("[^"\\]*"|-?\d+)', text))
        if members:
            m = members[duplicate % len(members)]
            again = f'"{m.group(1)}":' + ('"5"', "6", m.group(2))[duplicate % 3]
            text = text[: m.end()] + ", " + again + text[m.end() :]
    check(text.encode())


def _escaped(header: bytes, name: bytes, old: bytes, new: bytes) -> bytes:
    """``header`` with ``old`` in the value of extFields' ``name`` written as ``new``."""
    start = header.index(b'"' + name + b'":"') + len(name) + 4
    end = header.index(b'"', start)
    return header[:start] + header[start:end].replace(old, new) + header[end:]


V2 = BASES[0]
SCANNED = [
    _escaped(V2, b"i", b"k1", b"\\u006B\\u0031"),
    _escaped(V2, b"i", b"k1", b'\\/\\b\\f\\n\\r\\t\\"\\\\'),
    _escaped(V2, b"i", b"\\u0001", b"\\u0000"),
    _escaped(V2, b"a", b"G", b"G\\/x"),
    _escaped(V2, b"k", b"false", b"TRUE"),
    _escaped(V2, b"k", b"false", b"t"),
    _escaped(V2, b"g", b"1700000000000", b"-9223372036854775808"),
    _escaped(V2, b"g", b"1700000000000", b"+9223372036854775807"),
    _escaped(V2, b"e", b"1", b"-2147483648"),
    _escaped(V2, b"f", b"0", b"2147483647"),
    _escaped(V2, b"d", b"4", b"+007"),
    V2.replace(b'"e":"1"', b'"e":3'),
    V2.replace(b'"e":"1"', b'"e":-0'),
    V2.replace(b'"k":"false"', b'"k":true'),
    V2.replace(b'"k":"false"', b'"k":7'),
    V2.replace(b'"code":310,', b"")[:-1] + b',"code":310}',
    V2.replace(b'"opaque":', b'"remark":null,"opaque":'),
    V2.replace(b'"opaque":', b'"remark":"r\\u0041","opaque":'),
    V2.replace(b',"', b' ,\n\t"').replace(b'":', b'" : '),
    V2 + b"\r\n ",
    V2.replace(b'"a":"G",', b'"a":"G","zz":"\\u0062","other":12,"flag":true,'),
]
NOT_SCANNED = [
    _escaped(V2, b"i", b"k1", b"\\u0080"),
    _escaped(V2, b"i", b"k1", b"\\ud800"),
    _escaped(V2, b"i", b"k1", b"\\u00e9"),
    _escaped(V2, b"i", b"k1", "\u00e9".encode()),
    _escaped(V2, b"i", b"k1", b"\x01"),
    _escaped(V2, b"i", b"k1", b"\x7f"),
    _escaped(V2, b"b", b"T", b"\\u0054"),
    _escaped(V2, b"k", b"false", b"tru\\u0065"),
    _escaped(V2, b"e", b"1", b"\\u0031"),
    _escaped(V2, b"e", b"1", b"2147483648"),
    _escaped(V2, b"g", b"1700000000000", b"9223372036854775808"),
    _escaped(V2, b"a", b"G", b"G\\x"),
    _escaped(V2, b"a", b"G", b"G\\tx\\u00"),
    V2.replace(b'"e":"1"', b'"e":01'),
    V2.replace(b'"e":"1"', b'"e":1.0'),
    V2.replace(b'"e":"1"', b'"e":1e0'),
    V2.replace(b'"e":"1"', b'"e":1234567890123456789'),
    V2.replace(b'"e":"1"', b'"e":null'),
    V2.replace(b'"a":"G"', b'"a":4'),
    V2.replace(b'"a":"G"', b'"a":"G","a":"H"'),
    V2.replace(b'"a":"G"', b'"\\u0061":"G"'),
    V2.replace(b'"code":310', b'"code":310,"code":10'),
    V2.replace(b'"code":310', b'"code":11'),
    V2.replace(b'"code":310', b'"code":0310'),
    V2.replace(b'"opaque":0', b'"opaque":-1'),
    V2.replace(b'"opaque":0', b'"opaque":2147483648'),
    V2.replace(b'"language":"JAVA"', b'"language":null'),
    V2.replace(b'"language":"JAVA"', b'"language":"JAV\\u00c0"'),
    V2.replace(b'"language":"JAVA"', b'"language":"JAVA","x":1'),
    V2.replace(b'"b":"T",', b""),
    V2[:-1],
    V2 + b"x",
    V2 + b"\x00",
    b"\xef\xbb\xbf" + V2,
]


@pytest.mark.parametrize("header", SCANNED)
def test_plain_forms_are_scanned_as_the_reference_reads_them(header: bytes) -> None:
    assert check(header), header


@pytest.mark.parametrize("header", NOT_SCANNED)
def test_other_forms_are_left_to_the_reference(header: bytes) -> None:
    assert not check(header), header


def test_the_scan_is_used_by_decode_command() -> None:
    """Pure mode has no scanner: the orjson path decodes every header (monkeypatched here)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "_scan_send", None)
        assert type(command._decode_json_header(BASES[0], b"")) is RemotingCommand
    assert type(command._decode_json_header(BASES[0], b"")) is ScannedCommand


def test_request_send_header_from_the_scan() -> None:
    from remoting.names import topic_problem
    from remoting.send_header import decode_send_header, request_send_header

    topic_problem("T")
    topic_problem("TBW102")
    cmd = command._decode_json_header(BASES[0], b"")
    assert request_send_header(cmd) == decode_send_header(cmd.ext_fields, True)
    assert cmd.code == RequestCode.SEND_MESSAGE_V2


def test_the_scan_fills_only_slots_it_was_handed() -> None:
    slots = command._SCANNED_SLOTS
    for bad in (
        (ScannedCommand, slots[:-1], command._LAZY),
        (ScannedCommand, (*slots[:-1], ScannedCommand.ext_fields), command._LAZY),
        (RemotingCommand, slots, command._LAZY),  # header and header_values are not its slots
    ):
        with pytest.raises(TypeError):
            native.configure_send_scan(*bad)
    native.configure_send_scan(ScannedCommand, slots, command._LAZY)


@pytest.mark.parametrize("byte", range(256))
def test_every_byte_in_a_string_agrees(byte: int) -> None:
    """Each byte, raw and escaped as \\u00XX, inside a value, at its start, at its end, in a
    key and in a run longer than the scan's short-string cases: the scan agrees with the
    reference, and takes a printable ASCII byte but the quote and the backslash as it is."""
    raw = bytes([byte])
    header = BASES[0]
    topic = b'"b":"T"'
    assert topic in header
    took = []
    for value in (raw, raw + b"x", b"x" + raw, b"y" * 20 + raw + b"z" * 20, b"\\u00%02x" % byte):
        took.append(check(header.replace(topic, b'"b":"' + value + b'"')))
    for key in (b'"b' + raw + b'":', b'"' + raw + b'":', b'"' + raw + b'" :'):
        check(header.replace(topic, key + b'"T"'))
    check(header.replace(b'"language":"JAVA"', b'"language":"JA' + raw + b'VA"'))
    plain = 0x20 <= byte <= 0x7E and raw not in b'"\\'
    assert took[:4] == [plain] * 4
