"""REGISTER_BROKER bodies (docs/spec/remoting.md §9.1): RegisterBrokerBody JSON, its compressed
binary form, and the bare TopicConfigSerializeWrapper old brokers send. Pure."""

from __future__ import annotations

import struct
import zlib

from cattrs.errors import CattrsError

from remoting import fastjson
from remoting.body import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
)
from remoting.codes import V3_0_11
from remoting.errors import RemoteProtocolError
from remoting.serde import decode_body, encode_body, structure_body

_I32 = struct.Struct(">i")
# Ours (Java inflates without a bound): 100,000 topics take about 6 MB inflated.
INFLATED_MAX_BYTES = 64 * 1024 * 1024


class RegisterBodyError(ValueError):
    pass


def _read_chunk(data: bytes, pos: int) -> tuple[bytes, int]:
    if pos + 4 > len(data):
        raise RegisterBodyError("compressed register body is truncated")
    (length,) = _I32.unpack_from(data, pos)
    if length < 0 or pos + 4 + length > len(data):
        raise RegisterBodyError(f"compressed register body: bad length {length} at {pos}")
    return data[pos + 4 : pos + 4 + length], pos + 4 + length


def _inflate(body: bytes) -> bytes:
    """The body inflated, at most INFLATED_MAX_BYTES of it: a 16 MiB frame of deflated zeros
    would otherwise become 16 GiB."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body, INFLATED_MAX_BYTES)
    except zlib.error as exc:
        raise RegisterBodyError(f"compressed register body does not inflate: {exc}") from None
    if inflater.unconsumed_tail:
        raise RegisterBodyError(
            f"compressed register body inflates past {INFLATED_MAX_BYTES} bytes"
        )
    if not inflater.eof:
        raise RegisterBodyError("compressed register body is truncated")
    return data


def decode_compressed(body: bytes) -> RegisterBrokerBody:
    try:
        return _decode_compressed(_inflate(body))
    except RegisterBodyError:
        raise
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        CattrsError,
        RemoteProtocolError,
    ) as exc:
        # a field of the wrong shape or text: the peer's fault, answered, not logged
        raise RegisterBodyError(f"bad compressed register body: {exc!r}") from None


def _decode_compressed(data: bytes) -> RegisterBrokerBody:
    raw, pos = _read_chunk(data, 0)
    version = structure_body(DataVersion, fastjson.loads(raw))
    if pos + 4 > len(data):
        raise RegisterBodyError("compressed register body is truncated")
    (count,) = _I32.unpack_from(data, pos)
    pos += 4
    table = {}
    for _ in range(count):
        raw, pos = _read_chunk(data, pos)
        parts = raw.decode("utf-8").split(" ")
        if len(parts) < 5:
            raise RegisterBodyError(f"bad topic entry {raw!r}")
        name, read, write, perm, filter_type = parts[:5]
        table[name] = TopicConfig(
            topic_name=name,
            read_queue_nums=int(read),
            write_queue_nums=int(write),
            perm=int(perm),
            topic_filter_type=TopicFilterType[filter_type],
        )
    filters: list[str] = []
    if pos < len(data):
        raw, pos = _read_chunk(data, pos)
        filters = [str(f) for f in fastjson.loads(raw) or []]
    return RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=version
        ),
        filter_server_list=filters,
    )


def encode_compressed(body: RegisterBrokerBody) -> bytes:
    wrapper = body.topic_config_serialize_wrapper
    parts = []
    version = encode_body(wrapper.data_version)
    parts += [_I32.pack(len(version)), version, _I32.pack(len(wrapper.topic_config_table))]
    for config in wrapper.topic_config_table.values():
        text = (
            f"{config.topic_name} {config.read_queue_nums} {config.write_queue_nums} "
            f"{config.perm} {config.topic_filter_type.name}"
        ).encode()
        parts += [_I32.pack(len(text)), text]
    filters = fastjson.dumps(list(body.filter_server_list)).encode()
    parts += [_I32.pack(len(filters)), filters]
    return zlib.compress(b"".join(parts), 9)


def decode_register_body(body: bytes, *, compressed: bool, version: int) -> RegisterBrokerBody:
    """Whatever shape the broker's version sends; an empty body registers no topics (Java
    then uses a DataVersion of 0/0)."""
    if not body:
        return RegisterBrokerBody(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
                data_version=DataVersion(counter=0, timestamp=0)
            )
        )
    if version < V3_0_11:
        wrapper = decode_body(TopicConfigSerializeWrapper, body)
        return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper)
    if compressed:
        return decode_compressed(bytes(body))
    return decode_body(RegisterBrokerBody, body)
