"""Real stores for the reconciliation tests, written by the project's own message store: a
master with many topics and queues, and slaves cut from it at chosen points."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting.record import MESSAGE_MAGIC_CODE, RecordKind, scan_record

SEGMENT = 64 * 1024


def config(root: Path, **overrides: object) -> MessageStoreConfig:
    values = dict(
        store_path_root_dir=root,
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=5_000,
        max_index_num=20_000,
    )
    values.update(overrides)
    return MessageStoreConfig(**values)  # type: ignore[arg-type]


def message(topic: str, queue_id: int, body: bytes, key: str) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties={"KEYS": key, "UNIQ_KEY": key.upper()},
        born_timestamp=1_700_000_000_000,
        born_host=(b"\x7f\x00\x00\x01", 40000),
    )


def tricky_body(rng: random.Random, phys_guess: int) -> bytes:
    """A body holding the message magic and a plausible offset, to tempt a naive re-sync."""
    fake = struct.pack(">ii", 200, MESSAGE_MAGIC_CODE) + b"\x00" * 20
    fake += struct.pack(">q", phys_guess)
    return bytes(rng.randrange(256) for _ in range(rng.randrange(10, 400))) + fake


def build_master(root: Path, count: int, *, seed: int = 7, start: int = 0) -> DefaultMessageStore:
    rng = random.Random(seed)
    store = DefaultMessageStore(config(root), store_host=("10.0.0.1", 10911))
    store.load()
    for i in range(start, start + count):
        topic = f"Topic{i % 3}"
        body = (
            tricky_body(rng, store.max_phys_offset) if i % 7 == 0 else b"m" * rng.randrange(1, 900)
        )
        result = store.put_message(message(topic, i % 4, body, f"k{i}"))
        assert result.ok, result
    store.shutdown()
    return store


def copy_store(master_root: Path, slave_root: Path) -> None:
    shutil.copytree(master_root, slave_root)


def cut_slave(slave_root: Path, offset: int) -> None:
    """Truncate a copied store at ``offset`` (a record boundary): a slave that fell behind."""
    store = DefaultMessageStore(
        config(slave_root, broker_role=BrokerRole.SLAVE), store_host=("10.0.0.2", 10911)
    )
    store.load()
    store.truncate_dirty_tail(offset)
    store.shutdown()


def diverge_slave(slave_root: Path, offset: int, extra: int) -> None:
    """Cut at ``offset``, then write ``extra`` records the master never had (as after an ASYNC
    failover where the slave was promoted and took writes)."""
    cut_slave(slave_root, offset)
    store = DefaultMessageStore(config(slave_root), store_host=("10.0.0.2", 10911))
    store.load()
    for i in range(extra):
        assert store.put_message(message("Topic0", 0, b"only-on-slave", f"x{i}")).ok
    store.shutdown()


def record_offsets(root: Path) -> list[int]:
    """Physical offsets of every message record in a store's CommitLog (via the store codec)."""
    out = []
    for path in sorted((root / "commitlog").iterdir()):
        data = memoryview(path.read_bytes())
        pos = 0
        while pos < len(data):
            scan = scan_record(data, pos)
            if scan.kind is not RecordKind.MESSAGE:
                break
            out.append(int(path.name) + pos)
            pos += scan.size
    return out
