"""deploy/2m-4s-auto-3etcd with mqcluster: the production shape, a three-member etcd cluster.
With one etcd member killed the other two keep a quorum: kill -9 a group's master and another
member is still elected through them."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio

from deploy.manifest import load_manifest
from etcdstate.etcd import EtcdClient, EtcdError
from etcdstate.group import GroupState, group_key
from tests.integration.deploy.clusterkit import REPO, layout_up, wait_status_shows_master  # noqa: F401 (fixture)
from tests.kits.etcdkit import needs_etcd
from tests.kits.hakit import wait_until

pytestmark = [pytest.mark.slow, needs_etcd]
LAYOUT = "2m-4s-auto-3etcd"


def pid(base: Path, name: str) -> int:
    return int((base / "run" / f"{name}.pid").read_text())


async def test_one_etcd_member_down_a_master_is_still_replaced(layout_up) -> None:  # noqa: F811
    args, lines = await trio.to_thread.run_sync(layout_up, LAYOUT)
    assert all(any(f"etcd-{i} up" in line for line in lines) for i in (1, 2, 3))
    offset = int(args[args.index("--port-offset") + 1])
    base = Path(args[args.index("--base-dir") + 1])
    manifest = load_manifest(REPO / "deploy" / LAYOUT).shifted(offset)
    endpoints = manifest.etcd_endpoints.split(",")
    assert len(endpoints) == 3
    etcd = EtcdClient(endpoints)
    key = group_key("/rocketmq-trio", "DefaultCluster", "broker-a")
    try:

        async def state() -> GroupState | None:
            kv = await etcd.get(key)
            return None if kv is None else GroupState.decode(kv.value)

        first = await state()
        assert first is not None and first.master.broker_id == 1
        os.kill(pid(base, "etcd-1"), signal.SIGKILL)  # the one every client tried first
        os.kill(pid(base, "broker-a-1"), signal.SIGKILL)

        async def replaced() -> bool:
            try:
                now = await state()
            except EtcdError:  # "leader changed" while the two left elect their leader
                return False
            return now is not None and now.master.broker_id != 1 and now.epoch > first.epoch

        await wait_until(replaced, 90, "another member of broker-a elected through two of three")
        winner = f"broker-a-{(await state()).master.broker_id}"
    finally:
        await etcd.aclose()

    await wait_status_shows_master(args, winner)
