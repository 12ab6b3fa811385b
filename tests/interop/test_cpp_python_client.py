"""Our Python client and the official C++ client on the same topics, both ways: same keys,
tags and bodies on the other side."""

from __future__ import annotations

import pytest
import trio

from client.message import Message
from client.producer import Producer
from tests.interop.cppkit import acked_keys, run_driver
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv
from tests.kits.consumekit import consume_until, keys_of

pytestmark = pytest.mark.interop

BIG = "x" * 10_000  # above the 4 KiB compression threshold


@pytest.fixture
def cluster(processes, tmp_path):
    ns = start_namesrv(processes, tmp_path)
    start_broker(processes, broker_conf(tmp_path, namesrvAddr=ns.addr))
    return ns


def test_python_producer_to_cpp_consumer(cluster) -> None:
    ns = cluster
    expected = {}

    async def produce() -> None:
        async with Producer.open(ns.addr, "PyPG") as producer:
            for i in range(300):
                tag = "TagA" if i % 2 else "TagB"
                body = BIG if i == 7 else f"body-{i}"
                await producer.send(Message("PyToCpp", body.encode(), tags=tag, keys=f"key-{i}"))
                expected[f"key-{i}"] = (tag, body)

    trio.run(produce)
    events = run_driver(
        "consume", "--ns", ns.addr, "--topic", "PyToCpp", "--group", "CppG", "--expect", "300"
    )
    got = {e["received"]: (e["tag"], e["body"]) for e in events if "received" in e}
    assert got == expected


def test_cpp_producer_to_python_consumer(cluster) -> None:
    ns = cluster
    acked = acked_keys(
        run_driver("produce", "--ns", ns.addr, "--topic", "CppToPy", "--count", "300")
    )
    assert len(acked) == 300
    delivered = trio.run(
        consume_until, ns.addr, "PyG", "CppToPy", lambda got: len(keys_of(got)) >= 300
    )
    got = {m.keys: (m.tags, m.body) for m in delivered}
    tags = ["TagA", "TagB"]
    assert got == {f"key-{i}": (tags[i % 2], f"body-{i}".encode()) for i in range(300)}
