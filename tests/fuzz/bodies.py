"""Hostile request bodies and message properties (pure).

* property strings for sends: the keys the broker reads (DELAY, TRAN_MSG, REAL_TOPIC, ...) with
  values out of their range or naming paths, and separators in the wrong places;
* batch bodies (SEND_BATCH_MESSAGE) whose per-message lengths lie;
* JSON bodies (heartbeats, registrations, lock requests, ...) with a leaf of the wrong type or
  value, a key dropped, or nested too deep;
* compressed REGISTER_BROKER bodies that do not inflate, or inflate too far.
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from functools import cache
from pathlib import Path
from typing import Any

from remoting import message as codec
from tests.fuzz.values import NUMBERS, traversals
from tests.fuzz.wire import ODD_JSON

PROPERTY_KEYS = [
    "DELAY", "TRAN_MSG", "PGROUP", "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "UNIQ_KEY", "KEYS",
    "TAGS", "WAIT", "MAX_OFFSET", "MIN_OFFSET", "CLUSTER", "MAX_RECONSUME_TIMES",
    "RECONSUME_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES",
    "CHECK_IMMUNITY_TIME_IN_SECONDS", "__STARTDELIVERTIME", "REPLY_TO_CLIENT", "CORRELATION_ID",
    "MSG_TYPE", "TTL", "INSTANCE_ID", "ORIGIN_MESSAGE_ID", "TRACE_ON", "SHARDING_KEY",
]  # fmt: skip
_BATCH_ENTRY = struct.Struct(">iiiii")  # total size, magic, body CRC, flag, body length


def property_values(world: Path) -> list[str]:
    return [str(n) for n in NUMBERS] + [
        "", "true", "false", "x" * 40_000, "9" * 30, "\x00", "é", *traversals(world)[:6],
    ]  # fmt: skip


def hostile_properties(rng: random.Random, world: Path) -> str:
    """A send's properties string: a few broker-read keys with hostile values, or broken
    separators."""
    if rng.random() < 0.2:
        return rng.choice(
            ["\x01", "\x02", "\x01\x02\x01\x02", "k\x01v", "k\x01", "\x01v\x02", "a" * 40_000,
             "k\x01v\x02" * 5000, "KEYS\x01" + "k " * 20_000, "TAGS\x01\x00\x02"]
        )  # fmt: skip
    values = property_values(world)
    props = {"UNIQ_KEY": f"FUZZ{rng.randrange(1 << 40):X}", "WAIT": "true"}
    for _ in range(rng.randint(1, 3)):
        props[rng.choice(PROPERTY_KEYS)] = rng.choice(values)
    return codec.properties_to_string(props)


def batch_body(rng: random.Random, world: Path) -> bytes:
    """A SEND_BATCH_MESSAGE body: good entries with hostile properties, or lengths that lie."""
    entries = [
        (rng.choice([0, 1, -1, 2**31 - 1]), rng.randbytes(rng.randint(0, 40)),
         hostile_properties(rng, world) if rng.random() < 0.3 else f"KEYS\x01b{i}")
        for i in range(rng.randint(1, 8))
    ]  # fmt: skip
    try:
        body = bytearray(codec.encode_batch_body(entries))
    except (struct.error, UnicodeEncodeError):  # properties past 32 KiB: write it by hand
        body = bytearray(_raw_entry(b"x", "k" * 40_000))
    if rng.random() < 0.5:
        at = rng.choice([0, 16])  # the first entry's total size or its body length
        struct.pack_into(">i", body, at, rng.choice([-1, 0, 1, 19, 2**31 - 1, len(body) + 1]))
    return bytes(body)


def _raw_entry(entry_body: bytes, props: str) -> bytes:
    raw = props.encode("utf-8")
    total = _BATCH_ENTRY.size + len(entry_body) + 2 + len(raw)
    # a properties length past 32767 reads back negative (Java's short)
    head = _BATCH_ENTRY.pack(total, 0, 0, 0, len(entry_body))
    return head + entry_body + struct.pack(">H", len(raw) & 0xFFFF) + raw


def damaged_json_body(rng: random.Random, body: bytes) -> bytes:
    """A JSON body with one leaf replaced by a value of another type, a key dropped, or made
    too deep; falls back to random bytes when the body is not JSON."""
    try:
        data = json.loads(body)
    except ValueError:
        return rng.randbytes(rng.randint(0, 64))
    choice = rng.randrange(4)
    if choice == 0:
        depth = rng.choice([300, 5000])
        return b'{"a":' + b"[" * depth + b"]" * depth + b"}"
    if choice == 1:
        return json.dumps(rng.choice(ODD_JSON), allow_nan=True).encode("utf-8", "surrogatepass")
    leaves = list(_paths(data))
    if not leaves:
        return body
    path = rng.choice(leaves)
    if choice == 2:
        _set(data, path, rng.choice(ODD_JSON + [str(n) for n in NUMBERS]))
    else:
        _set(data, path, _DROP)
    return json.dumps(data, allow_nan=True).encode("utf-8", "surrogatepass")


_DROP = object()


def _paths(node: Any, path: tuple = ()) -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key)
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*path, index)
            yield from _paths(value, (*path, index))


def _set(root: Any, path: tuple, value: Any) -> None:
    node = root
    for key in path[:-1]:
        node = node[key]
    if value is _DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value


def compressed_register_body(rng: random.Random) -> bytes:
    """A REGISTER_BROKER body sent with compressed=true that is not what it claims."""
    choice = rng.randrange(4)
    if choice == 0:
        return rng.randbytes(rng.randint(0, 200))
    if choice == 1:
        return zlib.compress(rng.randbytes(100))[: rng.randint(1, 50)]
    if choice == 2:
        return _inflates_past_the_limit()
    return zlib.compress(struct.pack(">i", rng.choice([-1, 2**31 - 1, 5])) + b"x" * 8)


@cache
def _inflates_past_the_limit() -> bytes:
    """~64 KiB that inflate to one byte more than the NameServer's 64 MiB limit."""
    return zlib.compress(bytes(64 * 1024 * 1024 + 1), 9)
