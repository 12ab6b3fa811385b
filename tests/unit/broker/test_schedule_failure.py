"""A delayed message the store refuses to take back: retried every 10 s with one WARNING, not
at the pace of new arrivals on its level with an ERROR each (found by the fuzzer, tests/fuzz)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.offsets import DelayOffsetTable
from broker.schedule import RETRY_AFTER_FAILURE_S, ScheduleMessageService
from broker.store.delay_level import parse_delay_levels
from broker.store.types import PutMessageResult, PutMessageStatus
from tests.unit.store.conftest import StoreFactory, message


class RefusingStore:
    """The store, but it takes nothing back (a disk that filled up since)."""

    def __init__(self, store: object) -> None:
        self.store = store

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def put_message(self, msg: object) -> PutMessageResult:
        return PutMessageResult(status=PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="full")


def test_a_failed_delivery_waits_its_retry_period_whatever_arrives(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stores = StoreFactory(tmp_path / "store")
    store = stores.open()
    assert store.put_message(message(topic="T", DELAY="1")).ok
    offsets = DelayOffsetTable(None)  # type: ignore[arg-type]  # never persisted here
    levels = parse_delay_levels("1s 5s")
    service = ScheduleMessageService(RefusingStore(store), offsets, levels, clock=lambda: 2**62)
    with caplog.at_level(logging.WARNING, logger="broker.schedule"):
        wait = service.deliver_due(1, 0)
    assert (wait.seconds, wait.on_arrival) == (RETRY_AFTER_FAILURE_S, False)
    assert offsets.get(1) == 0  # the head stays: delivered later, never lost
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    store.shutdown()
