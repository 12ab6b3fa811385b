"""The scan of a PULL_MESSAGE's JSON header (remoting/native/codec/send_scan.c's registered
codes, through header_codec.request_decoder) against the reference: the orjson path's command
and extFields, and decode_plain_header's values on those extFields, for the C++ client's real
pulls, ours, and their mutations (test_send_scan.py's byte edits, changed and duplicated
values)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.processor import pull
from remoting import command
from remoting.codec_native import native
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, ScannedCommand, encode_command_bytes
from remoting.errors import RemoteProtocolError
from remoting.header_codec import plain_fields
from remoting.headers import PullMessageRequestHeader
from tests.conftest import INTEROP_FRAMES
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_send_scan import _edit, _header, edited_ext, edits, header_bases

pytestmark = needs_codec

FIELDS = plain_fields(PullMessageRequestHeader)
OURS = {"consumerGroup": "G", "topic": "T", "queueId": "1", "queueOffset": "100",
        "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "15000",
        "subVersion": "0", "subscription": "*", "expressionType": "TAG"}  # fmt: skip


BASES = header_bases(11, OURS, pull._decode_header)


def check(header: bytes) -> bool:
    """The scan agrees with the reference; True when it took the header."""
    try:
        reference = command._parse_json_header(header, b"")
    except RemoteProtocolError as exc:
        reference = exc
    try:
        fast = command._decode_json_header(header, b"")
    except RemoteProtocolError as exc:
        assert str(exc) == str(reference)
        return False
    assert not isinstance(reference, RemoteProtocolError)
    fields = ("code", "language", "version", "opaque", "flag", "remark", "ext_fields", "body")
    assert [getattr(fast, f) for f in fields] == [getattr(reference, f) for f in fields]
    values = fast.header_values
    if values is None:
        return False
    assert values == native.decode_plain_header(reference.ext_fields, FIELDS)
    assert pull._decode_header(fast) == PullMessageRequestHeader(*values)
    return True


def test_real_and_our_clients_pulls_are_scanned() -> None:
    assert len(BASES) >= 2, f"expected the C++ captures under {INTEROP_FRAMES}"
    for header in BASES:
        assert check(header), header
        assert type(command._decode_json_header(header, b"")) is ScannedCommand


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(base=st.sampled_from(BASES), ops=edits)
def test_byte_mutations_agree(base: bytes, ops: list[tuple[str, float, bytes]]) -> None:
    check(_edit(base, ops))


VALUES = st.one_of(
    st.sampled_from(["0", "7", "-1", "+3", "007", " 1", "2147483648", "9223372036854775808",
                     "T", "G", "Unseen-Name", "a b", "", "*", "\u00e9", "x\x01y"]),
    st.integers(-(2**64), 2**64),
    st.sampled_from([True, False, 1.5, [1]]),
)  # fmt: skip
KEYS = [*OURS, "bname", "other"]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    base=st.sampled_from(BASES),
    changes=st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=2),
    dropped=st.lists(st.sampled_from(KEYS), max_size=1),
    duplicate=st.one_of(st.none(), st.sampled_from(KEYS)),
    order=st.randoms(use_true_random=False),
)
def test_json_mutations_agree(
    base: bytes,
    changes: list[tuple[str, Any]],
    dropped: list[str],
    duplicate: str | None,
    order: Any,
) -> None:
    data = edited_ext(base, changes, dropped)
    ext = data["extFields"]
    items = list(ext.items())
    order.shuffle(items)
    data["extFields"] = dict(items)
    text = json.dumps(data, separators=(",", ":"))
    if duplicate is not None and f'"{duplicate}":' in text:
        text = text.replace(f'"{duplicate}":', f'"{duplicate}":"9","{duplicate}":', 1)
    check(text.encode())


def test_unregistered_codes_and_bad_registrations() -> None:
    heartbeat = _header(encode_command_bytes(RemotingCommand.request(34, {"a": "b"})))
    assert native.scan_send_command(heartbeat, b"") is None
    for bad in (
        (int(RequestCode.SEND_MESSAGE), FIELDS),
        (11, (("key", 9, True, 0, 0, None, None),)),
        (11, (("k\u00e9y", 0, True, 0, 0, None, None),)),
        (11, (("key", 2, True, 0, 0, None, None),)),  # a name field without its set
    ):
        try:
            native.configure_header_scan(*bad)
        except TypeError:
            continue
        raise AssertionError(bad)
    native.configure_header_scan(11, FIELDS)


OUR = BASES[0]
SCANNED = [
    OUR.replace(b'"queueId":"1"', b'"queueId":"-2147483648"'),
    OUR.replace(b'"queueId":"1"', b'"queueId":2147483647'),
    OUR.replace(b'"queueOffset":"100"', b'"queueOffset":"+0100"'),
    OUR.replace(b'"queueOffset":"100"', b'"queueOffset":"-9223372036854775808"'),
    OUR.replace(b'"subscription":"*"', b'"subscription":"a \\u007c\\u007C b\\/"'),
    OUR.replace(b'"subscription":"*",', b""),
    OUR.replace(b'"topic":"T"', b'"topic":"T","other":[1]'.replace(b"[1]", b"3")),
    OUR.replace(b'"expressionType":"TAG"', b'"expressionType":"TAG","bname":"b"'),
]
NOT_SCANNED = [
    OUR.replace(b'"queueId":"1"', b'"queueId":"2147483648"'),
    OUR.replace(b'"queueId":"1"', b'"queueId":-2147483649'),
    OUR.replace(b'"maxMsgNums":"32"', b'"maxMsgNums":"2147483648"'),
    OUR.replace(b'"sysFlag":"2"', b'"sysFlag":"-2147483649"'),
    OUR.replace(b'"queueOffset":"100"', b'"queueOffset":"9223372036854775808"'),
    OUR.replace(b'"queueOffset":"100"', b'"queueOffset":" 100"'),
    OUR.replace(b'"queueOffset":"100"', b'"queueOffset":"\\u0031"'),
    OUR.replace(b'"queueOffset":"100"', b'"queueOffset":true'),
    OUR.replace(b'"topic":"T"', b'"topic":"Unseen-Topic"'),
    OUR.replace(b'"topic":"T"', b'"topic":"\\u0054"'),
    OUR.replace(b'"consumerGroup":"G"', b'"consumerGroup":7'),
    OUR.replace(b'"subscription":"*"', b'"subscription":7'),
    OUR.replace(b'"subscription":"*"', b'"subscription":"*","subscription":"a"'),
    OUR.replace(b'"commitOffset":"0",', b""),
    OUR.replace(b'"topic":"T"', b'"topic":"T","other":[1]'),
]


def test_plain_pulls_are_scanned_as_the_reference_reads_them() -> None:
    for header in SCANNED:
        assert check(header), header


def test_other_pulls_are_left_to_the_reference() -> None:
    for header in NOT_SCANNED:
        assert not check(header), header
