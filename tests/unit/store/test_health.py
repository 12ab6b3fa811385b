"""StoreHealth: which disk trouble refuses sends, what they are answered, and a log that says
when trouble starts, reminds while it lasts and says when it is over, without flooding."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

from broker.store.health import COMMIT_LOG, DISPATCH, FLUSH, INDEX, LOG_EVERY_S, StoreHealth
from broker.store.mapped_file import DiskError
from broker.store.types import PutMessageStatus


def error(code: int, name: str = "consumequeue/T/0/00000000000000000000") -> DiskError:
    return DiskError(Path("/store") / name, "create", OSError(code, "boom"))


def test_only_blocking_areas_refuse_sends_and_each_ends_by_itself() -> None:
    health = StoreHealth(clock=lambda: 0.0)
    health.failed(INDEX, error(errno.ENOSPC, "index/1"))
    assert health.writable  # keys go unindexed, sends go on
    health.failed(DISPATCH, error(errno.ENOSPC))
    health.failed(FLUSH, error(errno.EIO, "commitlog/0"))
    assert not health.writable
    refusal = health.refusal()  # any full disk among the causes: DISK_FULL
    assert refusal.status is PutMessageStatus.DISK_FULL
    assert refusal.remark.startswith("the broker's disk is full: cannot create /store/consumequeue")
    health.recovered(DISPATCH)
    refusal = health.refusal()
    assert refusal.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "[Errno 5]" in refusal.remark and "a flush succeeds" in refusal.remark
    health.recovered(FLUSH)
    health.recovered(COMMIT_LOG)  # never failed: nothing to say
    assert health.writable
    info = health.runtime_info()
    assert info["storeWritable"] == "true" and info["storeDiskTrouble"].startswith("index:")


def test_trouble_is_logged_when_it_starts_then_at_most_every_log_interval(caplog) -> None:
    now = [0.0]
    health = StoreHealth(clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="broker.store.health"):
        for _ in range(1000):
            health.failed(DISPATCH, error(errno.ENOSPC))
            now[0] += 0.1  # 100 s of failures every 0.1 s
        health.recovered(DISPATCH)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == ["WARNING"] * (1 + int(100 // LOG_EVERY_S)) + ["INFO"]
    assert "area=dispatch" in lines[0][1] and "[Errno 28]" in lines[0][1]
    assert "consumequeue/T/0" in lines[0][1]
    assert lines[-1][1].startswith("disk trouble over: area=dispatch after 100.0 s, 1000 failures")
