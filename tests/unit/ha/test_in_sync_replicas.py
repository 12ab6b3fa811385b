"""inSyncReplicas / minInSyncReplicas on the master's HAService: a SYNC send waits until that
many slaves acked it, not the first one (controller mode; broker/controller.py)."""

from __future__ import annotations

import attrs
import trio

from broker.ha.protocol import Hello
from broker.ha.service import HAService
from broker.store.config import MessageStoreConfig
from broker.store.types import PutMessageStatus
from tests.unit.ha.test_idle_link import MemoryLog


@attrs.define(eq=False)
class Slave:
    ack_offset: int = 0
    verified: bool = True
    hello: Hello | None = None
    peer: str = "127.0.0.1:1"


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


def controller_mode(ha: HAService, *, epoch: int = 5, sync_state_set=frozenset({1, 2, 3})) -> None:
    ha.epoch, ha.member_id = epoch, 1
    ha.sync_state_set = lambda: sync_state_set


async def test_two_connections_of_one_member_count_once(tmp_path, autojump_clock):
    """minInSyncReplicas=3 (two slaves must ack): one member connected twice is one replica."""
    a1, a2 = Slave(hello=Hello(5, 2)), Slave(hello=Hello(5, 2))
    ha = service(tmp_path, a1, a2, acks_needed=2)
    controller_mode(ha)
    assert ha.replica_count == 1
    ack(ha, a1, 600)
    ack(ha, a2, 600)
    assert await ha.wait_replicated(500, 3.0) is PutMessageStatus.SLAVE_NOT_AVAILABLE
    b = Slave(hello=Hello(5, 3))
    ha.connections.add(b)  # type: ignore[arg-type]
    ha.links_version += 1  # as serve_slave does
    ack(ha, b, 600)
    assert ha.replica_count == 2
    assert await ha.wait_replicated(500, 3.0) is PutMessageStatus.PUT_OK


async def test_a_slave_of_an_older_epoch_or_outside_the_sync_state_set_does_not_count(
    tmp_path, autojump_clock
):
    """minInSyncReplicas=2: the one ack needed must come from a SyncStateSet member of this
    master's epoch that said who it is."""
    old = Slave(hello=Hello(4, 2))
    outsider = Slave(hello=Hello(5, 9))
    anonymous = Slave()  # a 4.x slave: no hello
    ha = service(tmp_path, old, outsider, anonymous, acks_needed=1)
    controller_mode(ha)
    for slave in (old, outsider, anonymous):
        ack(ha, slave, 600)
    assert ha.replica_count == 0
    assert await ha.wait_replicated(500, 3.0) is PutMessageStatus.SLAVE_NOT_AVAILABLE
    current = Slave(hello=Hello(5, 2))
    ha.connections.add(current)  # type: ignore[arg-type]
    ha.links_version += 1  # as serve_slave does
    ack(ha, current, 400)
    assert await ha.wait_replicated(500, 1.0) is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    ack(ha, current, 600)
    assert await ha.wait_replicated(500, 1.0) is PutMessageStatus.PUT_OK


def test_a_hello_of_a_newer_epoch_fences_the_master(tmp_path):
    ha = service(tmp_path, acks_needed=1)
    controller_mode(ha)
    fenced = []
    ha.on_newer_epoch = fenced.append
    ha.on_hello(Slave(hello=Hello(5, 2)))  # type: ignore[arg-type]
    assert fenced == []
    ha.on_hello(Slave(hello=Hello(6, 2)))  # type: ignore[arg-type]
    assert "epoch 5 is over" in fenced[0]
