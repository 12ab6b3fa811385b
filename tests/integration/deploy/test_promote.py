"""Promoting a slave with mqcluster: refused while the master lives, then the slave takes
writes as master, the old master is fenced, and it rejoins as a slave."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import psutil
import pytest
import trio

from client.admin import AdminClient
from client.message import Message, SendStatus
from client.producer import Producer
from remoting.body import TopicConfig
from remoting.client import RemotingClient
from tests.integration.deploy.clusterkit import REPO, mqcluster
from tests.kits.brokerkit import call, send_request
from tests.kits.consumekit import consume_until, keys_of


# 37 s of the default suite's 15-min budget: the manual promotion runs with make test-all;
# automatic failover (tests/integration/election) covers fencing and rejoin by default.
@pytest.mark.slow
def test_promote_fence_and_rejoin(layout_up, tmp_path) -> None:
    args, _ = layout_up("2m-2s-async")
    rows = {r["process"]: r for r in json.loads(mqcluster("status", *args, "--json").stdout)}
    ns = f"{rows['namesrv-1']['address']};{rows['namesrv-2']['address']}"

    async def create_topic() -> None:
        async with AdminClient.open(ns) as admin:
            await admin.create_topic_in_cluster(
                "DefaultCluster",
                TopicConfig(topic_name="Promo", read_queue_nums=4, write_queue_nums=4),
            )

    trio.run(create_topic)
    refused = mqcluster("promote", *args, "broker-a", ok=False)
    assert "still answers" in refused.stderr

    async def produce(prefix: str, n: int) -> list[str]:
        keys = []
        async with Producer.open(ns, "PG", send_msg_timeout_ms=2000) as producer:
            for i in range(n):
                result = await producer.send(Message("Promo", b"x", keys=f"{prefix}{i}"))
                assert result.status is SendStatus.SEND_OK
                if result.message_queue.broker_name == "broker-a":
                    keys.append(f"{prefix}{i}")
        return keys

    before_on_a = trio.run(produce, "before", 100)
    assert before_on_a
    _wait_lag_zero(args)  # ASYNC: what the slave has not copied yet would be lost
    psutil.Process(rows["broker-a-m"]["pid"]).send_signal(signal.SIGKILL)

    promoted = mqcluster("promote", *args, "broker-a")
    assert "broker-a-s is the master now" in promoted.stdout
    after = {r["process"]: r for r in json.loads(mqcluster("status", *args, "--json").stdout)}
    assert after["broker-a-s"]["role"] == "master" and after["broker-a-s"]["state"] == "up"
    on_new_a = trio.run(produce, "after", 100)
    assert on_new_a  # broker-a takes writes again, on the promoted slave

    # The old master's own configuration is fenced at the NameServers: it may not write.
    old_conf = tmp_path / "old-master.conf"
    lines = (tmp_path / "2m-2s-async" / "conf" / "broker-a-m.conf").read_text().splitlines()
    lines = [line for line in lines if not line.startswith("storePathRootDir=")]
    old_conf.write_text("\n".join([*lines, f"storePathRootDir={tmp_path}/zombie"]) + "\n")
    _check_fenced(old_conf, rows["broker-a-m"]["address"])

    mqcluster("start", *args, "broker-a-m")
    rejoined = {r["process"]: r for r in json.loads(mqcluster("status", *args, "--json").stdout)}
    assert rejoined["broker-a-m"]["role"] == "slave" and rejoined["broker-a-m"]["lag"] == "0 B"

    wanted = set(before_on_a) | set(on_new_a)
    trio.run(consume_until, ns, "PromoG", "Promo", lambda got: wanted <= keys_of(got))


def _wait_lag_zero(args: list[str]) -> None:
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = json.loads(mqcluster("status", *args, "--json").stdout)
        if all(r["lag"] == "0 B" for r in rows if r["role"] == "slave"):
            return
        time.sleep(0.2)
    raise AssertionError("slaves did not catch up")


def _check_fenced(conf, addr: str) -> None:
    """Start the old master with its master config: every send is refused as fenced."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker", "-c", str(conf)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
    )
    try:
        for line in proc.stdout:
            if line.startswith("READY"):
                break

        async def send() -> None:
            async with RemotingClient.open() as client:
                response = await call(client, addr, send_request("Promo", b"split-brain"))
                assert response.code == 16 and "FENCED" in (response.remark or "")

        trio.run(send)
    finally:
        proc.terminate()
        proc.wait(30)
