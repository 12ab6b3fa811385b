"""Expiry and disk protection with an injected disk-usage function and clock."""

from __future__ import annotations

import os
import time

import pytest

from broker.store.clean import decide
from broker.store.message_store import DefaultMessageStore
from broker.store.types import PutMessageStatus
from tests.unit.store.conftest import message, small_config


@pytest.mark.parametrize(
    ("usage", "hour", "expected"),
    [
        (0.10, 3, (False, False, False)),
        (0.10, 4, (True, False, False)),  # deleteWhen hour
        (0.80, 3, (True, False, False)),  # above diskMaxUsedSpaceRatio 75%
        (0.86, 3, (True, True, False)),  # above the clean-forcibly ratio
        (0.95, 3, (True, True, True)),  # above the warning ratio: writes refused
    ],
)
def test_policy(usage: float, hour: int, expected: tuple[bool, bool, bool]) -> None:
    decision = decide(
        usage=usage,
        hour=hour,
        delete_when="04",
        max_used_ratio=0.75,
        force_ratio=0.85,
        warning_ratio=0.90,
        clean_forcibly=True,
        manual=False,
    )
    assert (decision.delete, decision.force, decision.disk_full) == expected


class FakeDisk:
    def __init__(self) -> None:
        self.usage = 0.2

    def __call__(self, path: object) -> float:
        return self.usage


def open_store(tmp_path, disk: FakeDisk, clock, **overrides: object) -> DefaultMessageStore:
    store = DefaultMessageStore(
        small_config(tmp_path / "store", **overrides),
        store_host=("10.0.0.1", 10911),
        disk_usage=disk,
        clock=clock,
    )
    store.load()
    return store


def test_disk_full_refuses_writes_loses_nothing_and_recovers(tmp_path) -> None:
    disk, now = FakeDisk(), [1_700_000_000_000]
    store = open_store(tmp_path, disk, lambda: now[0], delete_when="03")
    stored = [
        store.put_message(message(body=f"m{i}".encode())).append.wrote_offset for i in range(20)
    ]
    disk.usage = 0.95
    store.clean.run_once()
    refused = store.put_message(message(body=b"no room"))
    assert refused.status is PutMessageStatus.DISK_FULL and "disk full" in refused.remark
    assert store.get_max_offset_in_queue("T", 0) == 20
    # Forced cleaning cannot remove the only (current) segment: nothing stored is lost.
    assert [store.look_message_by_offset(o) is not None for o in stored] == [True] * 20
    disk.usage = 0.5
    store.clean.run_once()
    assert store.put_message(message(body=b"room again")).ok
    store.shutdown()


def test_expired_segments_go_at_delete_when_and_queues_follow(tmp_path) -> None:
    disk = FakeDisk()
    hour = time.localtime().tm_hour
    now = [int(time.time() * 1000)]
    store = open_store(
        tmp_path, disk, lambda: now[0], delete_when=f"{(hour + 1) % 24:02d}", file_reserved_time=1
    )
    for i in range(400):
        store.put_message(message(queue_id=i % 2, body=b"x" * 200, KEYS=f"k{i}"))
    files = list(store.commit_log.queue.files)
    assert len(files) > 4
    for mapped in files[:-1]:
        old = time.time() - 2 * 3600
        os.utime(mapped.path, (old, old))
    store.clean.run_once()
    assert len(store.commit_log.queue.files) == len(files)  # not the deleteWhen hour
    store.shutdown()  # the config is frozen: reopen with deleteWhen set to this hour
    store = open_store(
        tmp_path, disk, lambda: now[0], delete_when=f"{hour:02d}", file_reserved_time=1
    )
    store.clean.run_once()
    assert len(store.commit_log.queue.files) == max(1, len(files) - 10)  # at most 10 per round
    min_offset = store.commit_log.min_phys_offset
    assert min_offset > 0
    for queue_id in (0, 1):
        consume_queue = store.find_consume_queue("T", queue_id)
        first = consume_queue.unit(consume_queue.min_queue_offset)
        assert first[0] >= min_offset
        assert store.get_message("G", "T", queue_id, 0, 1, None).status.name == "OFFSET_TOO_SMALL"
    store.shutdown()
