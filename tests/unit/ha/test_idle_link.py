"""An idle master/slave link stays up, and a dead one is closed, on Trio's mock clock
(docs/spec/ha.md §3.2, §3.5). The master's HAService and the slave's HAClient run as in the broker,
joined by an in-memory stream; their logs are in-memory byte arrays."""

from __future__ import annotations

import itertools

import attrs
import pytest
import trio
import trio.testing

from broker.ha.client import HAClient
from broker.ha.protocol import ChunkDecoder, ProtocolError, encode_chunk_header, encode_report
from broker.ha.service import HAService
from broker.store.config import MessageStoreConfig
from broker.store.types import PutMessageStatus


class MemoryLog:
    """A CommitLog in memory, offering what HA uses of DefaultMessageStore."""

    min_phys_offset = 0

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)

    @property
    def max_phys_offset(self) -> int:
        return len(self.data)

    def get_commit_log_data(self, phys_offset: int) -> memoryview | None:
        if phys_offset >= len(self.data):
            return None
        return memoryview(bytes(self.data[phys_offset:]))

    def append_to_commit_log(self, phys_offset: int, body: bytes) -> bool:
        if phys_offset != len(self.data):
            return False
        self.data += body
        return True


@attrs.define
class NoMasterAddress:
    ha_master_addr: str | None = None
    changed: trio.Event = attrs.Factory(trio.Event)


@attrs.define
class Recorded(trio.abc.Stream):
    """A stream end that notes when it received bytes."""

    inner: trio.abc.Stream
    received_at: list[float] = attrs.Factory(list)

    async def send_all(self, data) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes=None) -> bytes:
        data = await self.inner.receive_some(max_bytes)
        if data:
            self.received_at.append(trio.current_time())
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


def config(**overrides: int) -> MessageStoreConfig:
    return MessageStoreConfig(
        ha_send_heartbeat_interval=overrides.pop("heartbeat", 5000),
        ha_housekeeping_interval=overrides.pop("housekeeping", 20_000),
        sync_flush_timeout=overrides.pop("sync_flush_timeout", 3000),
        **overrides,
    )


def largest_gap(times: list[float], start: float, end: float) -> float:
    marks = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(marks))


async def test_an_idle_pair_stays_connected_for_ten_minutes_and_replicates_what_arrives(
    autojump_clock,
) -> None:
    # The master heartbeats faster than the slave: its chunks arrive far more often than the
    # slave's own heartbeat interval, which must not silence the slave's reports.
    master_log, slave_log = MemoryLog(b"m" * 1000), MemoryLog()
    service = HAService(master_log, config(heartbeat=1000), "127.0.0.1", 0)
    slave = HAClient(slave_log, config(), NoMasterAddress())
    master_end, slave_end = trio.testing.memory_stream_pair()
    reports = Recorded(master_end)
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.serve_slave, reports, "slave:1")
        nursery.start_soon(slave._stream, slave_end)
        for _ in range(3):
            await trio.sleep(200)
            master_log.data += b"n" * 500
            service.notify_new_data()
        await trio.sleep(1)
        assert service.connection_count == 1 and service.disconnects == 0
        nursery.cancel_scope.cancel()
    assert slave_log.data == master_log.data
    assert service.push2slave_max_offset == len(master_log.data)
    assert largest_gap(reports.received_at, start, trio.current_time()) <= 5.0


async def test_a_stream_of_master_heartbeats_does_not_stop_the_slaves_reports(
    autojump_clock,
) -> None:
    slave = HAClient(MemoryLog(), config(), NoMasterAddress())
    master_end, slave_end = trio.testing.memory_stream_pair()
    reports = Recorded(master_end)
    start = trio.current_time()
    with trio.move_on_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slave._stream, slave_end)
            while True:  # a master that heartbeats every 0.5 s and reads what it is sent
                await master_end.send_all(encode_chunk_header(0, 0))
                with trio.move_on_after(0.5):
                    while True:
                        await reports.receive_some(64)
    assert len(reports.received_at) >= 12
    assert largest_gap(reports.received_at, start, start + 60) <= 5.0


async def test_the_master_closes_a_slave_that_stopped_speaking(autojump_clock) -> None:
    service = HAService(MemoryLog(b"m" * 100), config(), "127.0.0.1", 0)
    master_end, slave_end = trio.testing.memory_stream_pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.serve_slave, master_end, "slave:1")
        await slave_end.send_all(encode_report(0))
        chunks = ChunkDecoder(1 << 20)
        with trio.move_on_after(60):  # reads everything, says nothing more
            while data := await slave_end.receive_some(1 << 16):
                chunks.feed(data)
    closed_after = trio.current_time() - start
    assert service.connection_count == 0 and service.disconnects == 1
    assert 20 <= closed_after < 21


async def test_the_slave_gives_up_on_a_master_that_stopped_speaking(autojump_clock) -> None:
    slave = HAClient(MemoryLog(), config(), NoMasterAddress())
    master_end, slave_end = trio.testing.memory_stream_pair()
    reports = Recorded(master_end)
    start = trio.current_time()
    async with trio.open_nursery() as nursery:

        async def silent_master() -> None:
            while await reports.receive_some(64):
                pass

        nursery.start_soon(silent_master)
        with pytest.raises(ProtocolError, match="nothing heard from the master"):
            await slave._stream(slave_end)
        nursery.cancel_scope.cancel()
    assert 20 <= trio.current_time() - start < 21
    assert len(reports.received_at) >= 4  # it went on reporting until then


# ------------------------------------------------------------------ a slave that comes back


async def fake_slave(service: HAService, nursery: trio.Nursery, offset: int, name: str):
    """A slave connection that reports ``offset`` and reads what the master sends."""
    master_end, slave_end = trio.testing.memory_stream_pair()
    nursery.start_soon(service.serve_slave, master_end, name)
    await slave_end.send_all(encode_report(offset))

    async def drain() -> None:
        try:
            while await slave_end.receive_some(1 << 16):
                pass
        except trio.ClosedResourceError:
            pass

    nursery.start_soon(drain)
    await trio.testing.wait_all_tasks_blocked()
    return slave_end


async def test_a_send_waits_for_a_slave_that_reconnects_within_its_budget(autojump_clock) -> None:
    log = MemoryLog(b"m" * 1000)
    service = HAService(log, config(), "127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        first = await fake_slave(service, nursery, 600, "slave:1")
        await first.aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert service.connection_count == 0

        started = trio.current_time()
        outcome: list[PutMessageStatus] = []

        async def send() -> None:
            outcome.append(await service.wait_replicated(1000, 3.0))

        nursery.start_soon(send)
        await trio.sleep(1.5)
        assert outcome == []  # still waiting, not SLAVE_NOT_AVAILABLE
        await fake_slave(service, nursery, 1000, "slave:2")
        assert outcome == [PutMessageStatus.PUT_OK]
        assert trio.current_time() - started == pytest.approx(1.5)
        nursery.cancel_scope.cancel()


async def test_a_slave_that_does_not_return_is_reported_not_available(autojump_clock) -> None:
    log = MemoryLog(b"m" * 1000)
    service = HAService(log, config(), "127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        first = await fake_slave(service, nursery, 600, "slave:1")
        await first.aclose()
        await trio.testing.wait_all_tasks_blocked()
        lost_at = trio.current_time()

        assert await service.wait_replicated(1000, 3.0) is PutMessageStatus.SLAVE_NOT_AVAILABLE
        assert trio.current_time() - lost_at == pytest.approx(3.0)  # waited its budget

        await trio.sleep(10)  # 2 x haSendHeartbeatInterval after the drop: written off
        before = trio.current_time()
        assert await service.wait_replicated(1000, 3.0) is PutMessageStatus.SLAVE_NOT_AVAILABLE
        assert trio.current_time() == before
        assert service._waiters == []  # timed-out waiters were given back
        nursery.cancel_scope.cancel()


async def test_a_returning_slave_that_does_not_ack_in_time_is_a_slave_timeout(
    autojump_clock,
) -> None:
    log = MemoryLog(b"m" * 1000)
    service = HAService(log, config(), "127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        first = await fake_slave(service, nursery, 600, "slave:1")
        await first.aclose()
        await trio.testing.wait_all_tasks_blocked()
        outcome: list[PutMessageStatus] = []

        async def send() -> None:
            outcome.append(await service.wait_replicated(1000, 3.0))

        nursery.start_soon(send)
        await trio.sleep(1)
        await fake_slave(service, nursery, 600, "slave:2")  # back, but never acks 1000
        await trio.sleep(5)
        assert outcome == [PutMessageStatus.FLUSH_SLAVE_TIMEOUT]
        nursery.cancel_scope.cancel()


def test_a_master_that_never_had_a_slave_answers_at_once() -> None:
    async def main() -> PutMessageStatus:
        service = HAService(MemoryLog(b"m" * 10), config(), "127.0.0.1", 0)
        return await service.wait_replicated(10, 3.0)

    clock = trio.testing.MockClock()
    assert trio.run(main, clock=clock) is PutMessageStatus.SLAVE_NOT_AVAILABLE
    assert clock.current_time() == 0
