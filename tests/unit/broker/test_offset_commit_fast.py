"""UPDATE_CONSUMER_OFFSET's fast path (issue 27): its header scanned from the JSON bytes
(header_codec.request_decoder, as PULL_MESSAGE's) agrees with the reference decoder on the C++
client's real commits, ours and their mutations, and its SUCCESS reply is the reference's
bytes (make_response, then encode_command)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.processor import client
from broker.processor.pull_reply import success_reply
from remoting import command
from remoting.codec_native import native
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, ScannedCommand, encode_command
from remoting.errors import RemoteProtocolError, RequestError
from remoting.header_codec import plain_fields
from remoting.headers import UpdateConsumerOffsetRequestHeader
from remoting.serde import decode_header
from tests.conftest import INTEROP_FRAMES
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_send_scan import _edit, edited_ext, edits, header_bases

CODE = int(RequestCode.UPDATE_CONSUMER_OFFSET)
FIELDS = plain_fields(UpdateConsumerOffsetRequestHeader)
OURS = {"consumerGroup": "G", "topic": "T", "queueId": "3", "commitOffset": "1024"}


BASES = header_bases(CODE, OURS, client._decode_update_offset)


def reference(request: RemotingCommand) -> Any:
    try:
        return decode_header(UpdateConsumerOffsetRequestHeader, request.ext_fields)
    except RequestError as exc:
        return (exc.code, exc.remark)


def check(header: bytes) -> bool:
    """The fast decode agrees with the reference; True when the scan took the header."""
    try:
        parsed = command._parse_json_header(header, b"")
    except RemoteProtocolError:
        return False
    fast = command._decode_json_header(header, b"")
    expected = reference(parsed)
    try:
        got = client._decode_update_offset(fast)
    except RequestError as exc:
        got = (exc.code, exc.remark)
    assert got == expected
    values = getattr(fast, "header_values", None)
    if values is None:
        return False
    assert values == native.decode_plain_header(parsed.ext_fields, FIELDS)
    return True


@needs_codec
def test_real_and_our_clients_commits_are_scanned() -> None:
    assert len(BASES) >= 2, f"expected the C++ captures under {INTEROP_FRAMES}"
    for header in BASES:
        assert check(header), header
        assert type(command._decode_json_header(header, b"")) is ScannedCommand


@needs_codec
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(base=st.sampled_from(BASES), ops=edits)
def test_byte_mutations_agree(base: bytes, ops: list[tuple[str, float, bytes]]) -> None:
    check(_edit(base, ops))


VALUES = st.one_of(
    st.sampled_from(["0", "-1", "+3", " 1", "2147483648", "9223372036854775808", "T", "G",
                     "Unseen-Name", "a b", "", "%RETRY%G", "\u00e9"]),
    st.integers(-(2**64), 2**64),
    st.sampled_from([True, 1.5, [1], None]),
)  # fmt: skip


@needs_codec
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    base=st.sampled_from(BASES),
    changes=st.lists(st.tuples(st.sampled_from([*OURS, "bname", "x"]), VALUES), max_size=2),
    dropped=st.lists(st.sampled_from(list(OURS)), max_size=1),
)
def test_json_mutations_agree(base: bytes, changes: list, dropped: list[str]) -> None:
    data = edited_ext(base, changes, dropped)
    check(json.dumps(data, separators=(",", ":")).encode())


@given(opaque=st.integers(-(2**31), 2**31 - 1))
def test_the_success_reply_is_the_reference_reply(opaque: int) -> None:
    request = RemotingCommand.request(CODE, OURS)
    request.opaque = opaque
    reply = success_reply(opaque)
    assert reply.code == ResponseCode.SUCCESS
    assert reply.buffers == [bytes(b) for b in encode_command(request.make_response())]
