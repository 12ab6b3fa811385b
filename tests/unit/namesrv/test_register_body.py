"""Compressed REGISTER_BROKER bodies from a hostile peer: every fault is a RegisterBodyError
(answered SYSTEM_ERROR with its text), and none inflates past INFLATED_MAX_BYTES."""

from __future__ import annotations

import struct
import zlib

import pytest

from namesrv import register_body
from namesrv.register_body import RegisterBodyError, decode_compressed, encode_compressed
from remoting.body import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper

I32 = struct.Struct(">i")


def body_of(*topics: str) -> RegisterBrokerBody:
    return RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table={
                t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in topics
            },
            data_version=DataVersion(counter=3, timestamp=7),
        )
    )


def chunks(*parts: bytes) -> bytes:
    return b"".join(I32.pack(len(p)) + p for p in parts)


def test_what_a_broker_sends_reads_back() -> None:
    decoded = decode_compressed(encode_compressed(body_of("A", "B")))
    assert sorted(decoded.topic_config_serialize_wrapper.topic_config_table) == ["A", "B"]


def test_a_body_inflating_past_the_bound_is_refused_without_inflating_it(monkeypatch) -> None:
    monkeypatch.setattr(register_body, "INFLATED_MAX_BYTES", 1 << 20)
    bomb = zlib.compress(bytes(64 << 20), 9)  # 64 KiB that inflate to 64 MiB
    with pytest.raises(RegisterBodyError, match="inflates past"):
        decode_compressed(bomb)


VERSION = b'{"counter":1,"timestamp":1}'
BAD_BODIES = {
    "not-deflate": b"\x00\x01garbage",
    "truncated-stream": zlib.compress(chunks(VERSION) + I32.pack(0))[:-4],
    "version-not-json": zlib.compress(chunks(b"{not json") + I32.pack(0)),
    "version-wrong-shape": zlib.compress(chunks(b'{"counter":"x"}') + I32.pack(0)),
    "entry-not-utf-8": zlib.compress(chunks(VERSION) + I32.pack(1) + chunks(b"\xff 1 1 6 X")),
    "entry-queues-not-numbers": zlib.compress(
        chunks(VERSION) + I32.pack(1) + chunks(b"T x 1 6 SINGLE_TAG")
    ),
    "entry-unknown-filter-type": zlib.compress(
        chunks(VERSION) + I32.pack(1) + chunks(b"T 1 1 6 NOPE")
    ),
    "filters-not-a-list": zlib.compress(chunks(VERSION) + I32.pack(0) + chunks(b"5")),
    "filters-too-deep": zlib.compress(chunks(VERSION) + I32.pack(0) + chunks(b"[" * 5000)),
    "count-past-the-data": zlib.compress(chunks(VERSION) + I32.pack(2**31 - 1)),
}


@pytest.mark.parametrize("body", list(BAD_BODIES.values()), ids=list(BAD_BODIES))
def test_every_fault_is_a_register_body_error(body: bytes) -> None:
    with pytest.raises(RegisterBodyError):
        decode_compressed(body)
