"""Auto-failover with real processes and a real etcd: one group of three members (whoever
starts first is master, the others its slaves), SYNC_MASTER, kill -9 the master."""

from __future__ import annotations

from pathlib import Path

import trio

from broker.ha.protocol import ChunkDecoder, encode_hello, encode_report
from broker.store.message_store import DefaultMessageStore
from etcdstate.etcd import EtcdClient
from etcdstate.group import GroupState, group_key
from remoting.client import RemotingClient
from remoting.errors import RemotingError
from tests.harness import ProcessPool, ServerProcess
from tests.kits import storekit
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_all,
    send_request,
    start_broker,
    start_namesrv,
)
from tests.kits.clikit import assert_refused, run_cli
from tests.kits.etcdkit import EtcdMember, etcd  # noqa: F401 (fixture)
from tests.kits.hakit import max_offset, slaves_of, wait_until

# Lease 5 s: with 3 s a loaded 2-core machine delays refreshes into failovers of its own.
HEART_BEAT_MS = 5000
TOPIC = "FailoverTopic"
PREFIX = "/rocketmq-trio"


async def group_state(client: EtcdClient) -> GroupState | None:
    kv = await client.get(group_key(PREFIX, "TestCluster", "broker-a"))
    return None if kv is None else GroupState.decode(kv.value)


def member_conf(tmp_path: Path, member_id: int, namesrv: str, endpoint: str) -> Path:
    return broker_conf(
        tmp_path,
        brokerId=member_id,
        brokerRole="SYNC_MASTER",
        namesrvAddr=namesrv,
        enableControllerMode="true",
        controllerEtcdEndpoints=endpoint,
        controllerHeartBeatTimeoutMills=HEART_BEAT_MS,
        minInSyncReplicas=2,
    )


async def send_keys(client: RemotingClient, addr: str, keys: list[str]) -> list[str]:
    """The keys the broker acknowledged (SEND_OK: stored on the master and a slave)."""
    acked = []
    for key in keys:
        try:
            response = await call(client, addr, send_request(TOPIC, key.encode(), keys=key))
        # Restarting in its new role. OSError: remoting/connection.py reads getpeername()
        # of a socket the peer reset just after connecting, unwrapped.
        except (RemotingError, OSError):
            continue
        if response.code == 0:
            acked.append(key)
    return acked


async def test_kill_9_master_elects_a_slave_and_loses_no_acked_message(
    processes: ProcessPool,
    tmp_path: Path,
    etcd: EtcdMember,  # noqa: F811
) -> None:
    namesrv = start_namesrv(processes, tmp_path).addr
    confs = {i: member_conf(tmp_path, i, namesrv, etcd.endpoint) for i in (1, 2, 3)}
    brokers: dict[int, ServerProcess] = {}
    addrs: dict[int, str] = {}
    for i in (1, 2, 3):  # the first to start is the master
        brokers[i] = start_broker(processes, confs[i], f"member-{i}")
        addrs[i] = brokers[i].addr
    state_client = EtcdClient([etcd.endpoint])
    async with trio.open_nursery() as nursery:
        client = RemotingClient(nursery)

        async def all_in_sync() -> bool:
            state = await group_state(state_client)
            return state is not None and state.sync_state_set == {1, 2, 3}

        await wait_until(all_in_sync, 30, "both slaves in the SyncStateSet")
        first = await group_state(state_client)
        assert first is not None
        old = first.master.broker_id  # member 1 unless a slow machine failed over already
        acked = await send_keys(client, addrs[old], [f"before-{n}" for n in range(40)])
        assert len(acked) == 40

        brokers[old].kill()

        async def new_master() -> bool:
            state = await group_state(state_client)
            return state is not None and state.master.broker_id != old

        # lease expiry plus a poll and a transaction; the time is a figure for bench/, the
        # deadline here only keeps a broken election from hanging the suite
        await wait_until(new_master, HEART_BEAT_MS / 1000 + 2 + 5, "a new master elected")
        elected = await group_state(state_client)
        assert elected is not None and elected.epoch > first.epoch
        winner = addrs[elected.master.broker_id]

        after: list[str] = []
        attempts = iter(range(1_000_000))

        async def a_send_succeeds() -> bool:
            # every attempt its own key: one answered SLAVE_NOT_AVAILABLE is stored anyway
            after.extend(await send_keys(client, winner, [f"attempt-{next(attempts)}"]))
            return bool(after)

        await wait_until(a_send_succeeds, 30, "a send acknowledged by the new master")
        after += await send_keys(client, winner, [f"after-{n}" for n in range(1, 20)])
        acked += after

        stored = [m.properties.get("KEYS") for m in await pull_all(client, winner, TOPIC, 0)]
        for key in acked:
            assert stored.count(key) == 1, key

        # The old master returns holding a tail no one else has (written after its last
        # replication, as unacknowledged sends are): it follows the new master, cuts that
        # tail (saved aside) and ends byte-identical with the new master.
        old_root = tmp_path / f"store-broker-a-{old}"
        tail_from, tail = write_unreplicated(old_root, 3)
        brokers[old] = start_broker(processes, confs[old], "old-master-again")

        async def caught_up() -> bool:
            return await max_offset(client, addrs[old]) == await max_offset(client, winner)

        await wait_until(caught_up, 60, "the old master caught up as a slave")
        assert (await group_state(state_client)).master.broker_id == elected.master.broker_id
        nursery.cancel_scope.cancel()
    await state_client.aclose()
    winner_id = elected.master.broker_id
    old_log = commit_log_bytes(old_root)
    new_log = commit_log_bytes(tmp_path / f"store-broker-a-{winner_id}")
    assert old_log == new_log
    saved = list((old_root / "truncated").iterdir())
    assert [p.name for p in saved] == [f"epoch-{elected.epoch + 1}-from-{tail_from}.commitlog"]
    assert saved[0].read_bytes() == tail
    assert b"unreplicated" not in new_log


def write_unreplicated(root: Path, count: int) -> tuple[int, bytes]:
    """Records appended to a stopped broker's store: where they start, and their bytes."""
    store = DefaultMessageStore(
        storekit.config(
            root,
            mapped_file_size_commit_log=16 * 1024 * 1024,
            mapped_file_size_consume_queue=6000 * 20,
            max_hash_slot_num=50_000,
            max_index_num=200_000,
        ),
        store_host=("127.0.0.1", 1),
    )
    store.load()
    start = store.max_phys_offset
    for i in range(count):
        msg = storekit.message(TOPIC, 0, b"unreplicated", f"unreplicated-{i}")
        assert store.put_message(msg).ok
    end = store.max_phys_offset
    tail = bytes(store.get_commit_log_data(start)[: end - start])
    store.shutdown()
    return start, tail


def commit_log_bytes(store: Path) -> bytes:
    files = sorted((store / "commitlog").iterdir())
    data = b"".join(f.read_bytes() for f in files)
    return data.rstrip(b"\x00")


async def mqadmin(*args: str) -> str:
    done = await trio.to_thread.run_sync(lambda: run_cli("client.mqadmin", *args))
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


async def fake_replica(
    ha_addr: str,
    start: int,
    hello: tuple[int, int] | None,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """An HA connection that acks every byte it receives, with or without a hello."""
    host, _, port = ha_addr.rpartition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        if hello is not None:
            await stream.send_all(encode_hello(*hello))
        await stream.send_all(encode_report(start))
        task_status.started()
        decoder = ChunkDecoder(1 << 24)
        while data := await stream.receive_some(1 << 16):
            chunks = decoder.feed(data)
            if chunks:
                await stream.send_all(encode_report(chunks[-1].offset + len(chunks[-1].body)))


async def test_mqadmin_elects_by_hand_and_min_in_sync_replicas_refuses_unstored(
    processes: ProcessPool,
    tmp_path: Path,
    etcd: EtcdMember,  # noqa: F811
) -> None:
    """Two members: mqadmin shows the state and moves the master to the other member by hand; then,
    minInSyncReplicas=2 (RocketMQ 5) with its only slave gone, the master refuses sends
    (SYSTEM_ERROR "in-sync replicas not enough") and stores nothing; with it back, it acks."""
    namesrv = start_namesrv(processes, tmp_path).addr
    confs = {i: member_conf(tmp_path, i, namesrv, etcd.endpoint) for i in (1, 2)}
    members = {i: start_broker(processes, confs[i], f"member-{i}") for i in (1, 2)}
    state_client = EtcdClient([etcd.endpoint])
    try:

        async def in_sync() -> bool:
            state = await group_state(state_client)
            return state is not None and state.sync_state_set == {1, 2}

        await wait_until(in_sync, 30, "the slave in the SyncStateSet")
        elect = ["electMaster", "-n", namesrv, "-a", etcd.endpoint, "-c", "TestCluster"]
        elect += ["-bn", "broker-a", "-b"]
        refused = await trio.to_thread.run_sync(lambda: run_cli("client.mqadmin", *elect, "7"))
        assert_refused(refused, "member 7 holds no lease")
        first = (await group_state(state_client)).master.broker_id  # 1 unless it failed over
        other = 3 - first
        shown = await mqadmin(
            "getSyncStateSet", "-n", namesrv, "-a", etcd.endpoint, "-b", "broker-a"
        )
        assert f"#MasterBrokerId\t{first}" in shown
        assert f"InSyncReplica:\tbrokerId={other}" in shown
        elected = await mqadmin(*elect, str(other))
        assert f"#BrokerMasterAddr\t{members[other].addr}" in elected
        master = members[other]

        async with trio.open_nursery() as nursery:
            client = RemotingClient(nursery)

            async def other_takes_sends() -> bool:
                return await send_keys(client, master.addr, ["by-hand"]) == ["by-hand"]

            await wait_until(other_takes_sends, 30, "the other member serving as master")
            epochs = await mqadmin("getBrokerEpoch", "-n", namesrv, "-b", "broker-a")
            assert epochs.count("#Epoch: 1\tStartOffset: 0") == 2  # both hold the first term
            ha = await mqadmin("haStatus", "-n", namesrv, "-b", master.addr)
            assert "epoch=" in ha and "syncStateSet=" in ha

            # Replicas that must not count: one that says nothing of itself (a second
            # connection of any slave, or anything that reaches the HA port) and one of an
            # older epoch; both ack all they get. Only distinct SyncStateSet members of the
            # master's epoch count toward minInSyncReplicas.
            state = await group_state(state_client)
            start = await max_offset(client, master.addr)
            await nursery.start(fake_replica, state.master.ha_addr, start, None)
            await nursery.start(fake_replica, state.master.ha_addr, start, (state.epoch - 1, first))

            async def fakes_connected() -> bool:
                return len(await slaves_of(client, master.addr)) == 3

            await wait_until(fakes_connected, 30, "the two fake replicas beside the slave")
            rows = await slaves_of(client, master.addr)
            assert sorted(bool(r.get("countsForInSync")) for r in rows) == [False, False, True]
            members[first].kill()  # its only slave
            request = send_request(TOPIC, b"refused", keys="refused")

            async def refused_unstored() -> bool:
                response = await call(client, master.addr, request)
                return response.code == 1 and response.remark == "in-sync replicas not enough"

            await wait_until(refused_unstored, 30, "the master to refuse sends without a slave")
            end = await max_offset(client, master.addr)
            assert await refused_unstored()
            assert await max_offset(client, master.addr) == end  # nothing stored

            start_broker(processes, confs[first], "slave-again")

            async def accepted() -> bool:
                return await send_keys(client, master.addr, ["after"]) == ["after"]

            await wait_until(accepted, 30, "the master to ack with its slave back")
            nursery.cancel_scope.cancel()
    finally:
        await state_client.aclose()
