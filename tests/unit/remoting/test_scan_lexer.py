"""The JSON scan's lexer at the edges its word-at-a-time steps have (remoting/native/codec/
json_scan.h: sixteen bytes a step for a string's plain bytes, eight or sixteen for kept strs
and digit strings, a masked four-byte compare for a member's head): each stop byte (quote,
backslash, control byte, DEL, a byte above 0x7F) and each escape at every offset of a string
and of the header, strings ending where the header ends, and headers cut anywhere and scanned
with nothing after them. Every case is held to the reference (test_send_scan.check)."""

from __future__ import annotations

import pytest

from remoting.codec_native import native
from remoting.command import ScannedCommand
from remoting.frame import Frame, encode_frame
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_send_scan import BASES, check

pytestmark = needs_codec

V2 = BASES[0]
TOPIC = b'"b":"T"'
PROPERTIES_AT = V2.index(b'"i":"') + 5
STOPS = [b'"', b"\\", b"\x00", b"\x1f", b"\x7f", b"\x80", b"\xff", b"\\u0001", b"\\u0002",
         b"\\u007f", b"\\u0080", b"\\n", b"\\x", b"\\u00", b"\\u001"]  # fmt: skip


@pytest.mark.parametrize("stop", STOPS)
def test_a_stop_byte_at_every_offset_of_a_string(stop: bytes) -> None:
    """The stop at offsets 0-40 of the topic's string (a step's every lane, the step after,
    and the byte loop's tail) and, through a longer producer group before it, at every
    alignment of the header."""
    for before in range(41):
        value = b"x" * before + stop + b"y" * 3
        check(V2.replace(TOPIC, b'"b":"' + value + b'"'))
    for shift in range(17):
        group = b"G" * (shift + 1)
        check(
            V2.replace(b'"a":"G"', b'"a":"' + group + b'"').replace(TOPIC, b'"b":"x' + stop + b'"')
        )


@pytest.mark.parametrize("at", range(0, 40))
def test_escapes_across_a_step(at: int) -> None:
    """\\u0001 and \\u0002 (the properties' separators) and a two-byte escape starting at each
    offset of the properties string, and the string's decoded value equal to the reference's."""
    for escape in (b"\\u0001", b"\\u0002", b"\\t", b"\\\\"):
        header = V2[:PROPERTIES_AT] + b"p" * at + escape + b"q" * (40 - at) + V2[PROPERTIES_AT:]
        assert check(header)


@pytest.mark.parametrize("length", [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33])
def test_strings_and_numbers_ending_the_header(length: int) -> None:
    """The last member's string or number running to the header's last bytes: the steps stop
    at the header's end, and a cut anywhere in the tail is refused as the reference refuses it."""
    tail_string = V2[:-1] + b',"remark":"' + b"r" * length + b'"}'
    tail_number = (
        V2.replace(b'"opaque":0,', b"")[:-1] + b',"opaque":' + b"7" * min(length, 12) + b"}"
    )
    for header in (tail_string, tail_number):
        check(header)
        for cut in range(1, 20):
            check(header[:-cut])


def test_a_header_that_ends_its_buffer_is_read_within_it() -> None:
    """A frame with no body: the header's last byte is the buffer's (whole_command reads the
    frame in place). Cut headers in such frames give the Frame, never a command."""
    for cut in range(0, 60):
        header = V2[: len(V2) - cut]
        data = encode_frame(0, header, b"")
        got = native.whole_command(Frame, data, 1 << 24)
        if cut == 0:
            assert type(got) is ScannedCommand and got.header == V2 and got.body == b""
        else:
            assert type(got) is Frame


@pytest.mark.parametrize("digits", ["0", "7", "42", "12345678", "123456789", "1700000000000",
                                    "9223372036854775807", "00000000", "0000000000000",
                                    "1234567x", "12345678x9", "123456789012345678"])  # fmt: skip
def test_digit_strings_of_every_length(digits: str) -> None:
    """The born timestamp and queue id as digit strings around the eight-at-once step."""
    for name in (b"g", b"e"):
        for quoted in (True, False):
            value = (b'"%s"' % digits.encode()) if quoted else digits.encode()
            header = V2.replace(b'"%s":"' % name, b'"%s":"old' % name)
            at = header.index(b'"%s":"old' % name)
            end = header.index(b'"', at + 5) + 1
            check(header[:at] + b'"%s":' % name + value + header[end:])


@pytest.mark.parametrize("length", range(0, 40))
def test_kept_strings_of_every_length(length: int) -> None:
    """A producer group of each length, twice and changed at its first and last byte: the kept
    str's two-load compares find the same and only the same bytes."""
    group = bytes(0x41 + (k % 26) for k in range(length))
    variants = [group, group]
    if length:
        variants += [b"#" + group[1:], group[:-1] + b"#", group]
    for value in variants:
        check(V2.replace(b'"a":"G"', b'"a":"' + value + b'"'))
