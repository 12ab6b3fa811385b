"""Byte-level mutations of whole frames (pure: a ``random.Random`` in, bytes out).

A frame is ``length(4) | serializeType<<24 | headerLength (4) | header | body``. Each mutation
either keeps the length prefix honest (``fix_length``), so the damage reaches the header and
body decoders, or leaves it lying, so it reaches the framing: a prefix that promises more than
comes, less than the header needs, a negative or a 2 GiB frame.
"""

from __future__ import annotations

import random
import struct

from remoting.frame import MAX_FRAME_BYTES

PREFIX = struct.Struct(">iI")
INTERESTING_BYTES = b'\x00\xff\x7f\x80"\\{}[]:,\x01\x02\n'


def fix_length(data: bytes) -> bytes:
    """The same bytes with the length prefix saying how many follow it."""
    if len(data) < 4:
        return data
    return struct.pack(">i", len(data) - 4) + data[4:]


def header_info(data: bytes) -> tuple[int, int] | None:
    """(serialize type, header length) of a frame, if it has that many bytes."""
    if len(data) < 8:
        return None
    mark = PREFIX.unpack_from(data)[1]
    return mark >> 24, mark & 0xFFFFFF


def bit_flips(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def interesting_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] = rng.choice(INTERESTING_BYTES)
    return bytes(out)


def chunk_edit(rng: random.Random, data: bytes) -> bytes:
    """Delete, repeat or insert random bytes somewhere past the prefix."""
    at = rng.randrange(4, max(5, len(data)))
    size = rng.randint(1, 64)
    how = rng.randrange(3)
    if how == 0:
        return data[:at] + data[at + size :]
    if how == 1:
        return data[:at] + data[at : at + size] * rng.randint(2, 50) + data[at:]
    return data[:at] + rng.randbytes(size) + data[at:]


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def splice(rng: random.Random, a: bytes, b: bytes) -> bytes:
    return a[: rng.randrange(len(a) + 1)] + b[rng.randrange(len(b) + 1) :]


def trailing(rng: random.Random, data: bytes) -> bytes:
    """A frame followed by garbage, or by a second copy of itself cut short."""
    if rng.random() < 0.5:
        return data + rng.randbytes(rng.randint(1, 32))
    return data + data[: rng.randrange(1, len(data))]


def length_lie(rng: random.Random, data: bytes) -> bytes:
    """A prefix that lies about the frame's length or the header's (both are taken as is)."""
    info = header_info(data)
    real = len(data) - 4
    if info is None or rng.random() < 0.5:
        length = rng.choice(
            [0, 1, 3, 4, 5, 7, real - 1, real + 1, real + 1000, MAX_FRAME_BYTES,
             MAX_FRAME_BYTES + 1, 2**31 - 1, -1, -(2**31), rng.randrange(-(2**31), 2**31)]
        )  # fmt: skip
        return struct.pack(">i", length) + data[4:]
    serialize_type, header_length = info
    choice = rng.randrange(3)
    if choice == 0:
        header_length = rng.choice([0, 1, header_length - 1, header_length + 1, real, 0xFFFFFF])
    elif choice == 1:
        serialize_type = rng.choice([1 - (serialize_type & 1), 2, 0x7F, 0x80, 0xFF])
    else:
        header_length, serialize_type = rng.randrange(1 << 24), rng.randrange(256)
    mark = (serialize_type << 24) | (header_length & 0xFFFFFF)
    return data[:4] + struct.pack(">I", mark) + data[8:]


def frame_bytes_mutation(rng: random.Random, data: bytes, other: bytes) -> tuple[str, bytes]:
    """One byte-level mutation of ``data`` (``other``: a second frame to splice with). Returns
    its name and the bytes; the length prefix is made honest again half the time."""
    choice = rng.randrange(7)
    if choice == 0:
        name, out = "bit-flips", bit_flips(rng, data)
    elif choice == 1:
        name, out = "interesting-bytes", interesting_bytes(rng, data)
    elif choice == 2:
        name, out = "chunk-edit", chunk_edit(rng, data)
    elif choice == 3:
        return "truncate", truncate(rng, data)
    elif choice == 4:
        name, out = "splice", splice(rng, data, other)
    elif choice == 5:
        return "trailing", trailing(rng, data)
    else:
        return "length-lie", length_lie(rng, data)
    if rng.random() < 0.5:
        return name + "+fixed-length", fix_length(out)
    return name, out
