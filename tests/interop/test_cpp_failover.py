"""The official C++ client producing across an automatic failover (broker/election/): one
group of three members, SYNC with minInSyncReplicas=2, kill -9 the master while the C++
producer sends; after a burst of errors it sends to the elected master, and a C++ consumer
reads every acknowledged key exactly once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from etcdstate.etcd import EtcdClient
from tests.integration.election.test_failover import group_state, member_conf
from tests.interop.cppkit import acked_keys, parse, received, run_driver, start_driver
from tests.kits.brokerkit import start_broker, start_namesrv
from tests.kits.etcdkit import EtcdMember, etcd  # noqa: F401 (fixture)
from tests.kits.hakit import wait_until

pytestmark = [pytest.mark.interop, pytest.mark.slow]

COUNT = 1200


def test_cpp_producer_keeps_sending_across_a_failover(
    processes,
    tmp_path: Path,
    etcd: EtcdMember,  # noqa: F811
) -> None:
    ns = start_namesrv(processes, tmp_path).addr
    members = {
        i: start_broker(processes, member_conf(tmp_path, i, ns, etcd.endpoint), f"member-{i}")
        for i in (1, 2, 3)
    }

    async def all_in_sync() -> None:
        client = EtcdClient([etcd.endpoint])
        try:

            async def full() -> bool:
                state = await group_state(client)
                return state is not None and state.sync_state_set == {1, 2, 3}

            await wait_until(full, 30, "all three in the SyncStateSet")
        finally:
            await client.aclose()

    trio.run(all_in_sync)
    out = tmp_path / "producer.jsonl"
    producer = start_driver(
        "produce", "--ns", ns, "--topic", "CppFailover", "--count", str(COUNT),
        "--interval-ms", "40", log=tmp_path / "producer.log", out=out,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(acked_keys(parse(out.read_text()))) < 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        members[1].kill()
        killed_at = len(parse(out.read_text()))
        producer.wait(timeout=240)
    finally:
        if producer.poll() is None:
            producer.kill()
    events = parse(out.read_text())
    acked = acked_keys(events)
    after = [e for e in events[killed_at:] if "sent" in e and e.get("status", 0) == 0]
    assert after, "the C++ producer never sent to the new master"
    got = run_driver(
        "consume", "--ns", ns, "--topic", "CppFailover", "--group", "CppAfterFailover",
        "--expect", str(len(acked)), "--timeout", "120", "--linger", "3",
    )  # fmt: skip
    counts = received(got)
    assert set(acked) <= set(counts)
    assert all(counts[key] == 1 for key in acked)
