"""A batch put's records before packing, and what dispatch reads of a record's properties.

``batch_plan`` turns a SEND_BATCH_MESSAGE body into records to pack: each entry's properties
followed by the batch's, its size and body CRC (the AppendCursor then packs them), with the
facts CommitLog.put_messages checks first. ``dispatch_fields`` reads TAGS, KEYS, UNIQ_KEY and
DELAY of an encoded properties string. Both run for every message of every batch (and of every
record reput reads back), so each is one native call when broker.store._native is built; the
``python_`` functions here are the reference the tests hold the native ones to.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from broker.store.store_native import native
from remoting import message as codec
from remoting.java_hash import tags_code
from remoting.message import MessageConst

# (flag, body, properties, size, body CRC): what remoting.record.pack_records_at writes.
Record = tuple[int, Any, bytes, int, int]

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
    broker/store/native/properties.c's dispatch_fields."""
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


# (records, count, total size, refused, first entry's body length, the refused entry's
# properties or None, its body length): what CommitLog.put_messages checks before the append,
# and ``records`` for AppendCursor.put_batch_dispatch (a list of Records here; native: the
# request's body view, the batch properties and a plan of the entries, no object per entry).
BatchPlan = tuple[Any, int, int, int, int, bytes | None, int]


def python_batch_plan(
    body: bytes | memoryview,
    batch_properties: bytes,
    fixed_size: int,
    max_body: int,
    max_properties: int,
) -> BatchPlan:
    """``python_batch_records`` with the facts put_messages checks: the reference of
    broker/store/native/batch.c's batch_plan."""
    records, total, refused = python_batch_records(
        body, batch_properties, fixed_size, max_body, max_properties
    )
    first_body = len(records[0][1]) if records else 0
    if refused < 0:
        return records, len(records), total, refused, first_body, None, 0
    _flag, entry_body, properties, _size, _crc = records[refused]
    return records, len(records), total, refused, first_body, properties, len(entry_body)


def batch_plan(
    body: bytes | memoryview,
    batch_properties: bytes,
    fixed_size: int,
    max_body: int,
    max_properties: int,
) -> BatchPlan:
    if native is None:
        return python_batch_plan(body, batch_properties, fixed_size, max_body, max_properties)
    return native.batch_plan(
        memoryview(body),
        batch_properties,
        fixed_size,
        max_body,
        max_properties,
        codec.MessageDecodeError,
    )
