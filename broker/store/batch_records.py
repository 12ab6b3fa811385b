"""The per-entry work of a batch put, either side of packing its records into the CommitLog.

``batch_records`` turns a SEND_BATCH_MESSAGE body into records to pack: each entry's properties
followed by the batch's, its size and body CRC. ``batch_requests`` turns the packed records
into message ids and dispatch requests. Both run for every message of every batch, so each is
one native call when remoting._speedups is built; the ``python_`` functions here are the
reference the tests hold the native ones to.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from broker.store.types import DispatchRequest
from remoting import message as codec
from remoting.java_hash import tags_code
from remoting.message import MessageConst
from remoting.speedups import native

# (flag, body, properties, size, body CRC): what remoting.record.pack_records_at writes.
Record = tuple[int, Any, bytes, int, int]

_new_request = tuple.__new__  # skip NamedTuple's Python-level __new__, once per message

# The properties dispatch needs, found in one C-level scan. A match needs the name at a segment
# start and a non-empty value, and findall keeps the last: exactly what Java's
# string2messageProperties ends up holding for these names (empty names and values dropped,
# later duplicates win).
_DISPATCH_PROPERTIES = re.compile("(?:^|\x02)(TAGS|KEYS|UNIQ_KEY|DELAY)\x01([^\x02]+)")


def dispatch_properties(text: str) -> dict[str, str]:
    """TAGS, KEYS, UNIQ_KEY and DELAY of an encoded properties string, where present."""
    return dict(_DISPATCH_PROPERTIES.findall(text)) if text else {}


def python_dispatch_fields(text: str) -> tuple[int, str, str, str | None]:
    """(tags code, KEYS, UNIQ_KEY, DELAY) of an encoded properties string: the reference of
    remoting/native/hashing.c's dispatch_fields."""
    found = dispatch_properties(text)
    return (
        tags_code(found.get(MessageConst.TAGS)),
        found.get(MessageConst.KEYS, ""),
        found.get(MessageConst.UNIQ_KEY, ""),
        found.get(MessageConst.DELAY),
    )


dispatch_fields = native.dispatch_fields if native is not None else python_dispatch_fields


def python_batch_records(
    body: bytes | memoryview,
    batch_properties: bytes,
    fixed_size: int,
    max_body: int,
    max_properties: int,
) -> tuple[list[Record], int, int]:
    """(records, total size, refused): ``refused`` is the index of the first entry whose body
    or properties are over the limits (the last record), or -1. The whole body is decoded
    first, so a malformed one raises MessageDecodeError wherever the damage is."""
    entries = codec.python_decode_batch_body(body)
    batch_text = batch_properties.decode("utf-8")
    separator = codec.PROPERTY_SEPARATOR
    records: list[Record] = []
    total = 0
    for flag, entry_body, text in entries:
        if text and batch_text and not text.endswith(separator):
            text += separator
        properties = (text + batch_text).encode("utf-8")
        size = fixed_size + len(entry_body) + len(properties)
        records.append((flag, entry_body, properties, size, zlib.crc32(entry_body) & 0x7FFFFFFF))
        total += size
        if len(properties) > max_properties or len(entry_body) > max_body:
            return records, total, len(records) - 1
    return records, total, -1


def python_batch_requests(
    records: list[Record],
    msg_id_prefix: str,
    topic: str,
    queue_id: int,
    phys_offset: int,
    queue_offset: int,
    store_timestamp: int,
    sys_flag: int,
    request_type: type[DispatchRequest] = DispatchRequest,
) -> tuple[list[str], list[DispatchRequest]]:
    """Message ids and dispatch requests (``request_type`` tuples) of ``records`` packed back
    to back from ``phys_offset``, with consecutive queue offsets from ``queue_offset``. The
    native twin takes the same arguments."""
    ids, requests = [], []
    for record in records:
        size = record[3]
        ids.append(f"{msg_id_prefix}{phys_offset:016X}")
        tags, keys, uniq_key, _ = python_dispatch_fields(record[2].decode("utf-8"))
        requests.append(
            _new_request(
                request_type,
                (
                    topic,
                    queue_id,
                    phys_offset,
                    size,
                    tags,
                    store_timestamp,
                    queue_offset,
                    keys,
                    uniq_key,
                    sys_flag,
                    {},
                ),
            )
        )
        phys_offset += size
        queue_offset += 1
    return ids, requests


def batch_records(
    body: bytes | memoryview,
    batch_properties: bytes,
    fixed_size: int,
    max_body: int,
    max_properties: int,
) -> tuple[list[Record], int, int]:
    if native is None:
        return python_batch_records(body, batch_properties, fixed_size, max_body, max_properties)
    return native.batch_records(
        memoryview(body),
        batch_properties,
        fixed_size,
        max_body,
        max_properties,
        codec.MessageDecodeError,
        zlib.crc32,
    )


batch_requests = native.batch_requests if native is not None else python_batch_requests
