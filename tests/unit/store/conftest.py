"""Small stores for store tests: tiny segments so every boundary is exercised."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from tests.unit.store.diskfaults import FaultyDisk

SMALL = dict(
    mapped_file_size_commit_log=8 * 1024,
    mapped_file_size_consume_queue=20 * 64,
    max_hash_slot_num=64,
    max_index_num=256,
)


def small_config(root: Path, **overrides: object) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=root, **{**SMALL, **overrides})  # type: ignore[arg-type]


def message(
    topic: str = "T", queue_id: int = 0, body: bytes = b"body", **properties: str
) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=dict(properties),
        born_timestamp=1_700_000_000_000,
        born_host=(b"\x7f\x00\x00\x01", 40000),
    )


class StoreFactory:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.opened: list[DefaultMessageStore] = []

    def open(self, **overrides: object) -> DefaultMessageStore:
        store = DefaultMessageStore(
            small_config(self.root, **overrides), store_host=("10.0.0.1", 10911)
        )
        store.load()
        self.opened.append(store)
        return store

    def config(self, **overrides: object) -> MessageStoreConfig:
        return small_config(self.root, **overrides)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[StoreFactory]:
    factory = StoreFactory(tmp_path / "store")
    yield factory
    for store in factory.opened:
        store.shutdown()


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> FaultyDisk:
    """A disk that fills up or fails on demand (tests/unit/store/diskfaults.py)."""
    return FaultyDisk(monkeypatch)


def crash(store: DefaultMessageStore) -> None:
    """Drop a store the way kill -9 would: no flush, no checkpoint, the abort file stays; the
    page cache (what was written into the mapping) survives, as it does for a killed process."""
    store.loaded = False
    store.allocation.close()
    store.commit_log.queue.close()
    store.consume_queues.close()
    store.index_service.close()
    store.checkpoint.close()
    store.lock.release()


__all__ = ["StoreFactory", "attrs", "crash", "message", "small_config"]
