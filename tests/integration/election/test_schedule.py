"""A seeded, reproducible schedule of 30 faults against one group of three members (SYNC,
minInSyncReplicas=2) and its etcd while a producer sends to whichever member etcd names
master: kill -9 a member, SIGSTOP one for up to 4 s, restart a killed one, kill etcd for up
to 3 s. At most one member is down at a time (the contract minInSyncReplicas=2 with three
members keeps). At the end, everyone running: every acknowledged key is in the final master's
log exactly once and the three CommitLogs are byte-identical.
``FAILOVER_SEED=n`` replays another schedule; every step is printed (pytest -s shows them)."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest
import trio

from etcdstate.etcd import EtcdClient, EtcdError
from remoting.client import RemotingClient
from remoting.errors import RemotingError
from tests.harness import ProcessPool, ServerProcess
from tests.integration.election.test_failover import (
    TOPIC,
    commit_log_bytes,
    group_state,
    member_conf,
)
from tests.kits.brokerkit import call, pull_all, send_request, start_broker, start_namesrv
from tests.kits.etcdkit import EtcdMember, etcd  # noqa: F401 (fixture)
from tests.kits.hakit import max_offset, wait_until

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("FAILOVER_SEED", "29"))
STEPS = 30


def choose(rng: random.Random, down: set[int]) -> str:
    if down:
        return "start"
    return rng.choices(["kill", "stop", "etcd", "pause"], weights=[35, 35, 15, 15])[0]


async def test_a_seeded_schedule_of_faults_loses_no_acked_message(
    processes: ProcessPool,
    tmp_path: Path,
    etcd: EtcdMember,  # noqa: F811
) -> None:
    rng = random.Random(SEED)
    namesrv = start_namesrv(processes, tmp_path).addr
    confs = {i: member_conf(tmp_path, i, namesrv, etcd.endpoint) for i in (1, 2, 3)}
    members: dict[int, ServerProcess] = {}
    for i in (1, 2, 3):
        members[i] = start_broker(processes, confs[i], f"member-{i}")
    addrs = {i: members[i].addr for i in members}
    state_client = EtcdClient([etcd.endpoint], timeout_s=1)
    acked: list[str] = []
    down: set[int] = set()

    async def produce(client: RemotingClient) -> None:
        n = 0
        while True:
            await trio.sleep(0.01)
            try:
                state = await group_state(state_client)
            except EtcdError:
                continue
            if state is None or state.master.broker_id in down:
                continue
            key = f"k{n}"
            n += 1
            try:
                request = send_request(TOPIC, b"x", keys=key)
                response = await call(client, addrs[state.master.broker_id], request, 3)
            except (RemotingError, OSError, trio.TooSlowError):
                continue
            if response.code == 0:
                acked.append(key)

    async with trio.open_nursery() as nursery:
        client = RemotingClient(nursery)

        async def in_sync() -> bool:
            state = await group_state(state_client)
            return state is not None and state.sync_state_set == {1, 2, 3}

        await wait_until(in_sync, 30, "all three in the SyncStateSet")
        nursery.start_soon(produce, client)
        for step in range(STEPS):
            action = choose(rng, down)
            running = sorted(set(members) - down)
            if action == "kill":
                victim = rng.choice(running)
                print(f"step {step}: kill -9 member {victim}", flush=True)
                members[victim].kill()
                down.add(victim)
            elif action == "start":
                back = sorted(down)[0]
                print(f"step {step}: start member {back}", flush=True)
                members[back] = await trio.to_thread.run_sync(
                    start_broker, processes, confs[back], f"member-{back}-{step}"
                )
                down.discard(back)
            elif action == "stop":
                victim, seconds = rng.choice(running), rng.uniform(0.5, 4.0)
                print(f"step {step}: SIGSTOP member {victim} for {seconds:.1f} s", flush=True)
                members[victim].send_signal(signal.SIGSTOP)
                await trio.sleep(seconds)  # the schedule's own pause, not a wait for an event
                members[victim].send_signal(signal.SIGCONT)
            elif action == "etcd":
                seconds = rng.uniform(0.5, 3.0)
                print(f"step {step}: etcd down for {seconds:.1f} s", flush=True)
                await trio.to_thread.run_sync(etcd.kill)
                await trio.sleep(seconds)
                await trio.to_thread.run_sync(etcd.start)
            else:
                print(f"step {step}: pause", flush=True)
            await trio.sleep(rng.uniform(0.5, 2.0))
        for back in sorted(down):
            members[back] = await trio.to_thread.run_sync(
                start_broker, processes, confs[back], f"member-{back}-end"
            )
        down.clear()

        async def settled() -> bool:
            try:
                state = await group_state(state_client)
                ends = {await max_offset(client, addrs[i]) for i in members}
            except (EtcdError, RemotingError, OSError):
                return False
            return state is not None and state.sync_state_set == {1, 2, 3} and len(ends) == 1

        await wait_until(settled, 120, "one master, every member in sync and caught up")
        nursery.cancel_scope.cancel()
    final = (await group_state(state_client)).master.broker_id
    await state_client.aclose()
    async with RemotingClient.open() as client:
        stored = [m.properties.get("KEYS") for m in await pull_all(client, addrs[final], TOPIC, 0)]
    missing = [key for key in acked if stored.count(key) != 1]
    print(f"seed {SEED}: {len(acked)} acked, master {final}, missing/duplicated {missing[:10]}")
    assert acked and not missing
    logs = {i: commit_log_bytes(tmp_path / f"store-broker-a-{i}") for i in members}
    assert logs[1] == logs[2] == logs[3]
