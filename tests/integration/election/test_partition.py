"""The master alone cut off from etcd (a relay in front of etcd for it only, which stops
answering): it stops taking writes before another member can be elected, so no two masters
ever acknowledge writes at the same time (its slaves reach etcd, so they refuse it promises);
healed, it rejoins as a slave and converges. And etcd down for everyone: the master serves on
its slave's promise not to campaign (broker/election/promises.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from etcdstate.etcd import EtcdClient
from remoting.client import RemotingClient
from remoting.errors import RemotingError
from tests.harness import ProcessPool
from tests.integration.election.test_failover import HEART_BEAT_MS, TOPIC, group_state, member_conf
from tests.kits.brokerkit import call, pull_all, send_request, start_broker, start_namesrv
from tests.kits.etcdkit import CutProxy, EtcdMember, etcd  # noqa: F401 (fixture)
from tests.kits.hakit import max_offset, runtime_info, wait_until

pytestmark = pytest.mark.slow


async def test_a_master_cut_off_from_etcd_fences_before_another_is_elected(
    processes: ProcessPool,
    tmp_path: Path,
    etcd: EtcdMember,  # noqa: F811
) -> None:
    namesrv = start_namesrv(processes, tmp_path).addr
    proxy = CutProxy(etcd.client_port)
    state_client = EtcdClient([etcd.endpoint])
    acks: list[tuple[float, int, str]] = []  # (when, member, key)
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.run)
        confs = {1: member_conf(tmp_path, 1, namesrv, proxy.endpoint)}
        confs.update({i: member_conf(tmp_path, i, namesrv, etcd.endpoint) for i in (2, 3)})
        members = {}
        for i in (1, 2, 3):  # in a thread: the relay runs on this event loop
            members[i] = await trio.to_thread.run_sync(
                start_broker, processes, confs[i], f"member-{i}"
            )
        client = RemotingClient(nursery)

        async def in_sync() -> bool:
            state = await group_state(state_client)
            return state is not None and state.sync_state_set == {1, 2, 3}

        await wait_until(in_sync, 30, "all three in the SyncStateSet")

        async def send_to_all() -> None:
            n = 0
            while True:
                for member_id, member in members.items():
                    key = f"k{n}"
                    n += 1
                    try:
                        response = await call(
                            client, member.addr, send_request(TOPIC, b"x", keys=key)
                        )
                    except (RemotingError, OSError):
                        continue
                    if response.code == 0:
                        acks.append((trio.current_time(), member_id, key))
                await trio.sleep(0.02)

        nursery.start_soon(send_to_all)

        async def some_acks() -> bool:
            return len(acks) >= 10

        await wait_until(some_acks, 30, "acks from the first master")
        proxy.cut()

        async def new_master_acked() -> bool:
            return any(member != 1 for _, member, _ in acks)

        await wait_until(new_master_acked, 60, "a new master acknowledging writes")
        old_last = max(t for t, member, _ in acks if member == 1)
        new_first = min(t for t, member, _ in acks if member != 1)
        assert old_last < new_first  # never two masters acknowledging at once

        proxy.heal()

        async def rejoined() -> bool:
            try:
                info = await runtime_info(client, members[1].addr)
            except (RemotingError, OSError):  # restarting in its new role
                return False
            return info.get("brokerRole") == "SLAVE"

        await wait_until(rejoined, 60, "the old master back as a slave")
        nursery.cancel_scope.cancel()
    winner = next(member for _, member, _ in acks if member != 1)
    async with trio.open_nursery() as nursery:
        client = RemotingClient(nursery)

        async def converged() -> bool:
            ends = [await max_offset(client, members[i].addr) for i in (1, winner)]
            return ends[0] == ends[1]

        await wait_until(converged, 60, "the old master caught up")
        stored = [
            m.properties.get("KEYS") for m in await pull_all(client, members[winner].addr, TOPIC, 0)
        ]
        for _, _, key in acks:
            assert stored.count(key) == 1, key
        nursery.cancel_scope.cancel()
    await state_client.aclose()


async def test_etcd_down_the_master_serves_on_promises_and_stays_master(
    processes: ProcessPool,
    tmp_path: Path,
    etcd: EtcdMember,  # noqa: F811
) -> None:
    """etcd gone for everyone: nobody is elected; the master keeps taking writes past its
    lease's end on the promises of its SyncStateSet peer (which cannot reach etcd either) and
    says so; etcd back: the same master, with the same epoch, and the slave never campaigned."""
    namesrv = start_namesrv(processes, tmp_path).addr
    confs = {i: member_conf(tmp_path, i, namesrv, etcd.endpoint) for i in (1, 2)}
    members = {i: start_broker(processes, confs[i], f"member-{i}") for i in (1, 2)}
    state_client = EtcdClient([etcd.endpoint])
    async with trio.open_nursery() as nursery:
        client = RemotingClient(nursery)

        async def in_sync() -> bool:
            state = await group_state(state_client)
            return state is not None and state.sync_state_set == {1, 2}

        await wait_until(in_sync, 30, "the slave in the SyncStateSet")
        before = await group_state(state_client)

        async def acked(member: int, key: str) -> bool:
            try:
                response = await call(
                    client, members[member].addr, send_request(TOPIC, b"x", keys=key)
                )
            except (RemotingError, OSError):
                return False
            return response.code == 0

        assert await acked(1, "before")
        await trio.to_thread.run_sync(etcd.kill)

        async def on_promises() -> bool:
            info = await runtime_info(client, members[1].addr)
            return "serving on promises of 2" in info.get("controllerStatus", "")

        await wait_until(on_promises, 30, "the master to say it serves on promises")
        # Well past the lease's end (HEART_BEAT_MS): the master still acknowledges writes,
        # each stored on the slave too (minInSyncReplicas=2).
        sent = 0
        deadline = trio.current_time() + 2 * HEART_BEAT_MS / 1000
        while trio.current_time() < deadline:
            assert await acked(1, f"during-{sent}"), "the master stopped taking writes"
            sent += 1
            await trio.sleep(0.1)
        info = await runtime_info(client, members[2].addr)
        assert info.get("brokerRole") == "SLAVE"
        assert "promised master 1 not to campaign" in info.get("controllerStatus", "")
        await trio.to_thread.run_sync(etcd.start)

        async def renewed() -> bool:
            info = await runtime_info(client, members[1].addr)
            return info.get("controllerStatus") == "master"

        await wait_until(renewed, 30, "the master's lease refreshed again")
        assert await acked(1, "after")
        after = await group_state(state_client)
        assert after.master.broker_id == 1 and after.epoch == before.epoch
        info = await runtime_info(client, members[1].addr)
        assert info.get("brokerRole") != "SLAVE" and info["controllerEpoch"] == str(before.epoch)
        nursery.cancel_scope.cancel()
    await state_client.aclose()
