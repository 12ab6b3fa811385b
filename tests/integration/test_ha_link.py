"""A healthy master/slave link between real ``mqbroker`` processes stays up while idle, and a
SYNC_MASTER waits for a slave that is only restarting (docs/spec/ha.md §3.2, §3.5, §5)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.integration.brokerkit import (
    broker_conf,
    call,
    pull_all,
    send_request,
    start_broker,
    start_namesrv,
)
from tests.integration.hakit import (
    runtime_info,
    slaves_of,
    start_pair,
    wait_converged,
    wait_topic_on_slave,
    wait_until,
)


async def wait_slave_connected(client: RemotingClient, master: str) -> None:
    async def connected() -> bool:
        return len(await slaves_of(client, master)) > 0

    await wait_until(connected, 30, "a slave to connect")


async def idle_sends(client: RemotingClient, addr: str, count: int, gap_s: float) -> list[int]:
    """``count`` sends, ``gap_s`` of silence between them: the link is idle in the gaps."""
    codes = []
    for i in range(count):
        response = await call(client, addr, send_request("Idle", b"x", keys=f"i{i}"))
        codes.append(response.code)
        await trio.sleep(gap_s)  # the idle time is what is under test, not a wait for an event
    return codes


async def test_an_idle_sync_pair_keeps_its_link_when_the_master_heartbeats_faster(
    processes, tmp_path
) -> None:
    # Scaled-down timers (RocketMQ's are 5 s and 20 s): the master's empty chunks every 0.1 s
    # arrive faster than the slave's own heartbeat interval. A slave that reported only after
    # a quiet read would never report, and the master would drop it after 1 s.
    namesrv = start_namesrv(processes, tmp_path)
    pair = start_pair(
        processes,
        tmp_path,
        namesrv.addr,
        role="SYNC_MASTER",
        start_slave=False,
        haSendHeartbeatInterval=100,
        haHousekeepingInterval=1000,
    )
    slave_conf = broker_conf(
        tmp_path,
        brokerId=1,
        brokerRole="SLAVE",
        namesrvAddr=namesrv.addr,
        haSendHeartbeatInterval=300,
        haHousekeepingInterval=1000,
    )
    slave = start_broker(processes, slave_conf, "slave")
    async with RemotingClient.open() as client:
        await wait_slave_connected(client, pair.master.addr)
        codes = await idle_sends(client, pair.master.addr, 6, 1.0)
        assert codes == [ResponseCode.SUCCESS] * 6
        master_info = await runtime_info(client, pair.master.addr)
        slave_info = await runtime_info(client, slave.addr)
    assert master_info["haSlaveDisconnects"] == "0"
    assert slave_info["haDisconnects"] == "0" and slave_info["haConnected"] == "true"


@pytest.mark.slow
async def test_an_idle_sync_pair_on_rocketmqs_timers_never_drops_in_three_minutes(
    processes, tmp_path
) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    pair = start_pair(processes, tmp_path, namesrv.addr, role="SYNC_MASTER")
    async with RemotingClient.open() as client:
        await wait_slave_connected(client, pair.master.addr)
        codes = await idle_sends(client, pair.master.addr, 30, 6.0)
        assert codes == [ResponseCode.SUCCESS] * 30
        master_info = await runtime_info(client, pair.master.addr)
        slave_info = await runtime_info(client, pair.slave.addr)
    assert master_info["haSlaveDisconnects"] == "0"
    assert slave_info["haDisconnects"] == "0"


async def test_a_sync_send_waits_for_a_slave_that_restarts_within_its_budget(
    processes, tmp_path
) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    # A budget wide enough for a slave process to restart on a loaded CI machine.
    pair = start_pair(
        processes, tmp_path, namesrv.addr, role="SYNC_MASTER", syncFlushTimeout=30_000
    )
    async with RemotingClient.open() as client:
        await wait_slave_connected(client, pair.master.addr)
        before = await call(client, pair.master.addr, send_request("Back", b"a", keys="before"))
        assert before.code == ResponseCode.SUCCESS

        pair.slave.kill()

        async def slave_gone() -> bool:
            info = await runtime_info(client, pair.master.addr)
            return info["haConnectionCount"] == "0"

        await wait_until(slave_gone, 30, "the master to notice the slave's death")
        answers: list[int] = []

        async def send_while_the_slave_is_down() -> None:
            request = send_request("Back", b"b", keys="during")
            answers.append((await call(client, pair.master.addr, request, 40)).code)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_while_the_slave_is_down)
            await trio.testing.wait_all_tasks_blocked(0.2)
            assert answers == []  # parked, not answered SLAVE_NOT_AVAILABLE
            await trio.to_thread.run_sync(pair.slave.start)
        assert answers == [ResponseCode.SUCCESS]
        await wait_converged(client, pair.master.addr, pair.slave.addr)
        await wait_topic_on_slave(client, pair.slave.addr, "Back")
        keys = [m.keys for m in await pull_all(client, pair.slave.addr, "Back", 0)]
        assert keys == ["before", "during"]
