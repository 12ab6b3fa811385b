"""The master's per-slave status (``haSlaves`` in runtime info, ``mqadmin haStatus``): lagMillis
measures how far behind in time a slave is, and agrees with lagBytes and inSync."""

from __future__ import annotations

import pytest

import broker.ha.connection as connection_module
from broker.ha.connection import HAConnection
from broker.ha.service import HAService
from broker.store.config import MessageStoreConfig
from tests.unit.ha.test_idle_link import MemoryLog


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(connection_module, "now_ms", fake)
    return fake


def slave_of(log: MemoryLog, tmp_path) -> tuple[HAService, HAConnection]:
    service = HAService(log, MessageStoreConfig(store_path_root_dir=tmp_path), "127.0.0.1", 0)
    connection = HAConnection(service, stream=None, peer="127.0.0.1:40000")  # type: ignore[arg-type]
    service.connections.add(connection)
    connection.on_report(log.max_phys_offset)  # the handshake: the slave has everything
    return service, connection


def report(connection: HAConnection, log: MemoryLog, acked: int) -> None:
    connection.next_offset = log.max_phys_offset  # the master sent everything it has
    connection.on_report(acked)


async def test_a_slave_trailing_a_busy_master_by_a_few_bytes_lags_by_one_report(
    clock, tmp_path
) -> None:
    log = MemoryLog(b"x" * 4096)
    service, connection = slave_of(log, tmp_path)
    # A minute of steady sends: every 100 ms the master appends 1 KiB and the slave acks all
    # but the last 200 bytes, never exactly the master's end.
    for _ in range(600):
        clock.ms += 100
        log.data += b"y" * 1024
        report(connection, log, log.max_phys_offset - 200)
    [status] = service.slaves()
    assert status["lagBytes"] == 200 and status["inSync"]
    assert 0 < status["lagMillis"] <= 200  # it used to say 60000: a minute since connecting


async def test_a_slave_that_stopped_acking_lags_by_the_time_since_it_last_had_it_all(
    clock, tmp_path
) -> None:
    log = MemoryLog(b"x" * 4096)
    service, connection = slave_of(log, tmp_path)
    caught_up = clock.ms
    for _ in range(50):  # 5 s of sends the slave never acks
        clock.ms += 100
        log.data += b"y" * 1024
        report(connection, log, 4096)
    [status] = service.slaves()
    assert status["lagBytes"] == 50 * 1024
    assert status["lagMillis"] == clock.ms - caught_up
    assert status["inSync"] == (status["lagBytes"] < status["inSyncMaxLagBytes"])


async def test_a_caught_up_slave_has_no_lag(clock, tmp_path) -> None:
    log = MemoryLog(b"x" * 4096)
    service, connection = slave_of(log, tmp_path)
    clock.ms += 30_000
    log.data += b"y" * 10
    report(connection, log, log.max_phys_offset)
    [status] = service.slaves()
    assert (status["lagBytes"], status["lagMillis"], status["inSync"]) == (0, 0, True)
