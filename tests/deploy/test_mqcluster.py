"""``mqcluster`` with real processes: every layout comes up in order and goes down completely,
refusals are clear, and the 2m-2s-sync layout survives losing a master."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import psutil
import pytest
import trio

from client.admin import AdminClient
from client.message import Message, SendStatus
from client.producer import Producer
from deploy.manifest import load_manifest
from remoting.body import TopicConfig
from remoting.ports import read_ephemeral_range
from tests.consumekit import consume_until, keys_of
from tests.deploy.clusterkit import REPO, free_offset, mqcluster

LAYOUTS = ["single", "2m-2s-async", "2m-2s-sync"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_up_status_down(layout_up, layout) -> None:
    args, lines = layout_up(layout)
    manifest = load_manifest(REPO / "deploy" / layout)
    steps = [line for line in lines if line.startswith("[") and " up, pid " in line]
    assert len(steps) == len(manifest.processes)
    # NameServers first, then masters, then slaves.
    roles = [next(p.role for p in manifest.processes if f"] {p.name} up" in line) for line in steps]
    assert roles == sorted(roles, key=["namesrv", "master", "slave"].index)
    status = json.loads(mqcluster("status", *args, "--json").stdout)
    assert {row["state"] for row in status} == {"up"}
    logs = Path(args[2]) / "logs"
    for spec in manifest.processes:  # each writes (and rotates) its own log: logFile
        assert "serving on" in (logs / f"{spec.name}.log").read_text()
        out = (logs / f"{spec.name}.out").read_text()  # stdout/stderr: READY, warnings, errors
        assert "READY" in out and " INFO " not in out.split("READY")[1]
    assert all(row["lag"] == "0 B" for row in status if row["role"] == "slave")
    pids = [row["pid"] for row in status]

    again = mqcluster("up", *args, ok=False)
    assert "already running" in again.stderr

    mqcluster("down", *args)
    assert not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids
    )
    assert {row["state"] for row in json.loads(mqcluster("status", *args, "--json").stdout)} == {
        "down"
    }


def test_a_taken_port_is_named(tmp_path) -> None:
    offset = free_offset("single")
    port = 9876 + offset
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        failed = mqcluster(
            "up",
            "deploy/single",
            "--base-dir",
            str(tmp_path),
            "--port-offset",
            str(offset),
            ok=False,
        )
    assert f"port {port} (needed by namesrv-1) is already in use" in failed.stderr


def test_ports_an_outgoing_connection_could_take_are_refused(tmp_path) -> None:
    span = read_ephemeral_range()
    if span is None:
        pytest.skip("the kernel does not say which ports it hands to outgoing connections")
    offset = span.first + 100 - 9876  # the NameServer's port lands inside the range
    failed = mqcluster(
        "up", "deploy/single", "--base-dir", str(tmp_path), "--port-offset", str(offset), ok=False
    )
    assert f"port of namesrv-1 {9876 + offset} lies in the kernel's ephemeral" in failed.stderr
    assert "pick another --port-offset" in failed.stderr
    assert not (tmp_path / "run").exists()  # nothing was started


def test_bad_layout_is_a_clear_error(tmp_path) -> None:
    failed = mqcluster("up", str(tmp_path), ok=False)
    assert "no cluster.toml" in failed.stderr


def test_sync_pair_layout_survives_losing_a_master(layout_up, tmp_path) -> None:
    args, _ = layout_up("2m-2s-sync")
    status = json.loads(mqcluster("status", *args, "--json").stdout)
    addr = {row["process"]: row["address"] for row in status}
    pid = {row["process"]: row["pid"] for row in status}
    ns = f"{addr['namesrv-1']};{addr['namesrv-2']}"

    async def scenario() -> None:
        async with AdminClient.open(ns) as admin:
            await admin.create_topic_in_cluster(
                "DefaultCluster",
                TopicConfig(topic_name="Orders", read_queue_nums=4, write_queue_nums=4),
            )
        on_a: set[str] = set()
        async with Producer.open(ns, "PG", send_msg_timeout_ms=2000) as producer:
            for i in range(200):
                result = await producer.send(Message("Orders", b"x", keys=f"before{i}"))
                assert result.status is SendStatus.SEND_OK  # SYNC_MASTER: on the slave too
                if result.message_queue.broker_name == "broker-a":
                    on_a.add(f"before{i}")
            assert on_a
            psutil.Process(pid["broker-a-m"]).send_signal(signal.SIGKILL)
            after = [
                await producer.send(Message("Orders", b"y", keys=f"after{i}")) for i in range(50)
            ]
            assert all(r.status is SendStatus.SEND_OK for r in after)
            assert {r.message_queue.broker_name for r in after[5:]} == {"broker-b"}
        await consume_until(ns, "Drain", "Orders", lambda got: on_a <= keys_of(got), timeout_s=90)

    trio.run(scenario)


def test_a_process_dying_during_up_fails_it_with_its_log(tmp_path) -> None:
    layout = tmp_path / "broken"
    layout.mkdir()
    (layout / "namesrv.conf").write_text("")
    (layout / "broker.conf").write_text("brokerName=broker-x\nflushDiskType=SOMETIMES\n")
    offset = free_offset("single")
    (layout / "cluster.toml").write_text(
        f'name = "broken"\n\n[[process]]\nname = "ns"\nrole = "namesrv"\nconf = "namesrv.conf"\n'
        f'port = {9876 + offset}\n\n[[process]]\nname = "bx"\nrole = "master"\n'
        f'conf = "broker.conf"\nport = {10911 + offset}\n'
    )
    failed = mqcluster("up", str(layout), "--base-dir", str(tmp_path / "run"), ok=False)
    assert "bx exited with code" in failed.stderr
    assert "flushDiskType" in failed.stdout  # the broker's own complaint: its log tail, above
    status = json.loads(
        mqcluster("status", str(layout), "--base-dir", str(tmp_path / "run"), "--json").stdout
    )
    assert {row["state"] for row in status} == {"down"}  # what had started was stopped again
