"""deploy/2m-4s-auto with mqcluster: etcd, two NameServers and two groups of three members come
up; kill -9 a group's master and another member takes over; ``mqcluster status`` shows it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio

from etcdstate.etcd import EtcdClient
from etcdstate.group import GroupState, group_key
from tests.integration.deploy.clusterkit import layout_up, wait_status_shows_master  # noqa: F401 (fixture)
from tests.kits.etcdkit import needs_etcd
from tests.kits.hakit import wait_until

pytestmark = [pytest.mark.slow, needs_etcd]


async def test_the_auto_layout_fails_over_by_itself(layout_up) -> None:  # noqa: F811
    args, lines = await trio.to_thread.run_sync(layout_up, "2m-4s-auto")
    assert any("starting etcd-1 (etcd)" in line for line in lines)
    offset = int(args[args.index("--port-offset") + 1])
    base = Path(args[args.index("--base-dir") + 1])
    etcd = EtcdClient([f"http://127.0.0.1:{31379 + offset}"])
    key = group_key("/rocketmq-trio", "DefaultCluster", "broker-a")
    try:

        async def state() -> GroupState | None:
            kv = await etcd.get(key)
            return None if kv is None else GroupState.decode(kv.value)

        first = await state()
        assert first is not None and first.master.broker_id == 1
        os.kill(int((base / "run" / "broker-a-1.pid").read_text()), signal.SIGKILL)

        async def replaced() -> bool:
            now = await state()
            return now is not None and now.master.broker_id != 1

        await wait_until(replaced, 60, "another member of broker-a elected")
        winner = f"broker-a-{(await state()).master.broker_id}"
    finally:
        await etcd.aclose()

    await wait_status_shows_master(args, winner)
