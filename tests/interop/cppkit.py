"""Running the official C++ client's driver (tests/interop/cpp_driver.py) as a subprocess and
reading its JSON lines."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("rocketmq.client", reason="the official C++ client wheel is not installed")

REPO = Path(__file__).resolve().parents[2]


def driver_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.interop.cpp_driver", *args]


def run_driver(*args: str, timeout: float = 120) -> list[dict]:
    done = subprocess.run(
        driver_argv(*args), cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"driver failed ({done.returncode}): {done.stderr[-2000:]}"
    return parse(done.stdout)


def parse(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def start_driver(*args: str, log: Path, out: Path | None = None) -> subprocess.Popen:
    """Background driver. With ``out`` its events go to that file, never to a pipe nobody
    reads (a full pipe would block the client's consume threads)."""
    stdout = out.open("w") if out is not None else subprocess.PIPE
    return subprocess.Popen(
        driver_argv(*args), cwd=REPO, stdout=stdout, stderr=log.open("w"), text=True
    )


def acked_keys(events: list[dict]) -> list[str]:
    """Keys of the sends the producer saw acknowledged (SEND_OK is status 0)."""
    return [e["key"] for e in events if "sent" in e and e.get("status", 0) == 0]


def received(events: list[dict]) -> Counter:
    return Counter(e["received"] for e in events if "received" in e)


def wait_consumed(broker_addr: str, group: str, timeout_s: float = 60) -> None:
    """Block until the group's committed offsets reach the broker's max offsets on every
    queue (clients commit every 5 s), polling GET_CONSUME_STATS; bounded by ``timeout_s``."""
    import trio

    from remoting.body import ConsumeStats
    from remoting.client import RemotingClient
    from remoting.codes import RequestCode
    from remoting.command import RemotingCommand
    from remoting.serde import decode_body

    async def poll() -> None:
        async with RemotingClient.open() as client:
            with trio.fail_after(timeout_s):
                while True:
                    request = RemotingCommand.request(
                        RequestCode.GET_CONSUME_STATS, {"consumerGroup": group}
                    )
                    response = await client.invoke(broker_addr, request, 5)
                    stats = decode_body(ConsumeStats, response.body)
                    lagging = [
                        w
                        for mq, w in stats.offset_table.items()
                        if not mq.topic.startswith("%RETRY%")
                        and w.consumer_offset < w.broker_offset
                    ]
                    if stats.offset_table and not lagging:
                        return
                    await trio.sleep(0.2)

    trio.run(poll)


def wait_members_own_queues(ns_addr: str, group: str, topic: str, members: int) -> None:
    """Block until ``members`` consumers of ``group`` are connected and each reports (through
    GET_CONSUMER_RUNNING_INFO, relayed by the broker) at least one queue of ``topic``: the
    event a rebalance produces. The C++ client rebalances every 10 s, hence the 60 s bound."""
    import trio

    from client.admin import AdminClient
    from client.errors import MQClientError

    async def owned() -> list[int]:
        async with AdminClient.open(ns_addr) as admin:
            connection = await admin.consumer_connection(group)
            counts = []
            for member in connection.connection_set:
                info = await admin.consumer_running_info(group, member.client_id)
                counts.append(sum(1 for mq in info.mq_table if mq.topic == topic))
            return counts

    async def poll() -> None:
        with trio.fail_after(60):
            while True:
                try:
                    counts = await owned()
                except MQClientError:  # a member that left or has not answered yet
                    counts = []
                if len(counts) == members and all(counts):
                    return
                await trio.sleep(0.5)

    trio.run(poll)
