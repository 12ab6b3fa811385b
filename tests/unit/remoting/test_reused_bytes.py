"""The bytes objects of a scanned command made from a read (remoting/native/codec/
reused_bytes.c, through whole_command and split_commands): an object the last commands carried
is written again only once nothing else holds it, so no body or header anyone can still see
ever changes. Each command's bytes equal the frame's; a body kept by a caller, a memoryview of
one, or a hashed one keeps its bytes and hash while the next frames of its size are read."""

from __future__ import annotations

import sys

from remoting.codec_native import native
from remoting.command import ScannedCommand
from remoting.frame import Frame, encode_frame
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_send_scan import BASES

pytestmark = needs_codec

HEADER = BASES[0]  # our client's V2 send


def frame(body: bytes, header: bytes = HEADER) -> bytes:
    return encode_frame(0, header, body)


def command(data: bytes) -> ScannedCommand:
    cmd = native.whole_command(Frame, data, 1 << 24)
    assert type(cmd) is ScannedCommand
    return cmd


def split(data: bytes) -> list[ScannedCommand]:
    items, pos, frames = native.split_commands(Frame, data, 0, 1 << 24)
    assert pos == len(data) and frames == 0
    return items


def bodies(n: int, size: int = 1024) -> list[bytes]:
    return [bytes([k % 251]) * size for k in range(n)]


def test_a_freed_body_takes_the_next_frames_bytes() -> None:
    first, second = bodies(2)
    cmd = command(frame(first))
    address = id(cmd.body)
    del cmd
    cmd = command(frame(second))
    assert cmd.body == second and cmd.header == HEADER
    assert id(cmd.body) == address  # the pool's object again: nothing else held it
    assert hash(cmd.body) == hash(bytes(second))


def test_a_body_still_held_is_never_written() -> None:
    kept_bodies, kept_views, hashes = [], [], []
    for k, body in enumerate(bodies(40)):
        cmd = command(frame(body))
        assert cmd.body == body
        if k % 3 == 0:
            kept_bodies.append(cmd.body)
        elif k % 3 == 1:
            kept_views.append(memoryview(cmd.body))
        else:
            hashes.append((cmd.body, hash(cmd.body)))
        del cmd
    expected = bodies(40)
    assert kept_bodies == expected[0::3]
    assert [bytes(v) for v in kept_views] == expected[1::3]
    for body, hashed in hashes:
        assert hash(body) == hashed == hash(bytes(body))


def test_headers_and_bodies_of_a_pipelined_read() -> None:
    """More commands alive at once than the pool holds: each its own bytes."""
    headers = [HEADER.replace(b'"opaque":0', b'"opaque":%d' % k) for k in range(20)]
    data = b"".join(frame(b, h) for b, h in zip(bodies(20, 700), headers, strict=True))
    for _ in range(3):
        cmds = split(data)
        assert [c.body for c in cmds] == bodies(20, 700)
        assert [c.header for c in cmds] == headers
        assert len({id(c.body) for c in cmds}) == 20
        del cmds


def test_sizes_the_pool_leaves_alone() -> None:
    """Empty and one-byte bodies are CPython's shared objects; big ones are not kept."""
    for body in (b"", b"x", b"y", bytes(16385), bytes(40000)):
        first = command(frame(body)).body
        again = command(frame(body)).body
        assert first == again == body
    one = command(frame(b"x")).body
    assert command(frame(b"y")).body == b"y" and one == b"x"  # CPython's shared objects
    big = command(frame(bytes(40000))).body
    assert sys.getrefcount(big) == 2  # the caller's reference and getrefcount's: none kept
