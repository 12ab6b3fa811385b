"""inSyncReplicas / minInSyncReplicas on the master's HAService: a SYNC send waits until that
many slaves acked it, not the first one (controller mode; broker/controller.py)."""

from __future__ import annotations

import attrs
import trio

from broker.ha.service import HAService
from broker.store.config import MessageStoreConfig
from broker.store.types import PutMessageStatus
from tests.unit.ha.test_idle_link import MemoryLog


@attrs.define(eq=False)
class Slave:
    ack_offset: int = 0
    verified: bool = True


def service(tmp_path, *slaves: Slave, acks_needed: int) -> HAService:
    ha = HAService(MemoryLog(b"x" * 1000), MessageStoreConfig(store_path_root_dir=tmp_path), "", 0)
    ha.acks_needed = acks_needed
    ha.connections = set(slaves)  # type: ignore[arg-type]
    return ha


def ack(ha: HAService, slave: Slave, offset: int) -> None:
    slave.ack_offset = offset
    ha.on_ack(offset)


async def test_two_acks_needed_wait_for_the_second_slave(tmp_path, autojump_clock):
    a, b = Slave(), Slave()
    ha = service(tmp_path, a, b, acks_needed=2)
    results = []

    async def send() -> None:
        results.append(await ha.wait_replicated(500, 3.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await trio.sleep(0.1)
        ack(ha, a, 900)  # one slave far ahead is not enough
        await trio.sleep(0.1)
        assert results == []
        ack(ha, b, 500)
    assert results == [PutMessageStatus.PUT_OK]
    assert ha.replicated_offset == 500 and ha.push2slave_max_offset == 900


async def test_too_few_slaves_is_answered_at_once_and_one_ack_still_works(tmp_path, autojump_clock):
    ha = service(tmp_path, Slave(), acks_needed=2)
    assert await ha.wait_replicated(500, 3.0) is PutMessageStatus.SLAVE_NOT_AVAILABLE
    one = Slave()
    ha = service(tmp_path, one, Slave(), acks_needed=1)
    ack(ha, one, 600)
    assert await ha.wait_replicated(500, 3.0) is PutMessageStatus.PUT_OK


async def test_the_second_ack_times_out(tmp_path, autojump_clock):
    a, b = Slave(), Slave()
    ha = service(tmp_path, a, b, acks_needed=2)
    ack(ha, a, 900)
    assert await ha.wait_replicated(500, 3.0) is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
