"""The official RocketMQ 5 Python SDK (rocketmq-python-client, unmodified) sends through mqproxy
to our broker; our 4.x consumer receives what it sent, tags, keys and properties intact."""

from __future__ import annotations

import time

from tests.integration.proxy.proxykit import create_topic, run_sdk
from tests.kits.consumekit import consume_until


def endpoints(proxy) -> str:
    return f"127.0.0.1:{proxy.port}"


async def test_sync_sends_arrive_with_tag_keys_and_properties(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "SdkSync")
    specs = [
        {
            "body": f"sync-{i}",
            "tag": f"Tag{i}",
            "keys": [f"k{i}", f"order-{i}"],
            "properties": {"color": f"c{i}", "unicode": "é中"},
        }
        for i in range(3)
    ]
    receipts = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "SdkSync",
            "mode": "sync",
            "messages": specs,
        }
    )
    assert [r["ok"] for r in receipts] == [True] * 3, receipts
    got = await consume_until(ns.addr, "SdkSyncCG", "SdkSync", lambda m: len(m) >= 3)
    by_body = {m.body.decode(): m for m in got}
    for spec, receipt in zip(specs, receipts, strict=True):
        msg = by_body[spec["body"]]
        assert msg.properties["UNIQ_KEY"] == receipt["message_id"]
        assert msg.properties["TAGS"] == spec["tag"]
        assert set(msg.properties["KEYS"].split(" ")) == set(spec["keys"])
        assert msg.properties["color"] == spec["properties"]["color"]
        assert msg.properties["unicode"] == "é中"
        assert msg.queue_offset == receipt["offset"]
        assert "__SHARDINGKEY" not in msg.properties


async def test_async_sends_all_arrive_once(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "SdkAsync")
    specs = [{"body": f"async-{i}", "tag": "A"} for i in range(20)]
    receipts = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "SdkAsync",
            "mode": "async",
            "messages": specs,
        }
    )
    assert all(r["ok"] for r in receipts) and len(receipts) == 20, receipts
    got = await consume_until(ns.addr, "SdkAsyncCG", "SdkAsync", lambda m: len(m) >= 20)
    assert sorted(m.properties["UNIQ_KEY"] for m in got) == sorted(
        r["message_id"] for r in receipts
    )
    assert len({m.queue_id for m in got}) > 1  # round-robin over the topic's queues


async def test_fifo_groups_keep_one_queue_each_in_send_order(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "SdkFifo", queues=8, message_type="FIFO")
    groups = [f"order-{g}" for g in range(4)]
    specs = [{"body": f"{g}:{i}", "group": g} for i in range(6) for g in groups]
    receipts = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "SdkFifo",
            "mode": "sync",
            "messages": specs,
        }
    )
    assert all(r["ok"] for r in receipts), receipts
    got = await consume_until(ns.addr, "SdkFifoCG", "SdkFifo", lambda m: len(m) >= len(specs))
    for g in groups:
        mine = [m for m in got if m.properties.get("__SHARDINGKEY") == g]
        assert len({m.queue_id for m in mine}) == 1, g  # one group, one queue
        in_queue_order = [m.body.decode() for m in sorted(mine, key=lambda m: m.queue_offset)]
        assert in_queue_order == [f"{g}:{i}" for i in range(6)]


async def test_delivery_time_becomes_a_timer_message(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "SdkDelay", message_type="DELAY")
    before_s = int(time.time())
    receipts = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "SdkDelay",
            "mode": "sync",
            "messages": [{"body": "later", "delay_s": 2}],
        }
    )
    assert receipts[0]["ok"], receipts
    got = await consume_until(ns.addr, "SdkDelayCG", "SdkDelay", lambda m: len(m) >= 1)
    deliver_ms = int(got[0].properties["TIMER_DELIVER_MS"])
    assert (before_s + 2) * 1000 <= deliver_ms <= (int(time.time()) + 2) * 1000
    assert "DELAY" not in got[0].properties  # useDelayLevel=false, as RocketMQ's default
    assert got[0].store_timestamp >= deliver_ms, "delivered before its time (broker timers)"


async def test_transaction_commit_is_delivered_and_rollback_is_not(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "SdkTx", message_type="MIXED")  # halves and a normal sentinel
    job = {"op": "send", "endpoints": endpoints(proxy), "topic": "SdkTx", "mode": "transaction"}
    rolled = await run_sdk({**job, "commit": False, "messages": [{"body": "rolled-back"}]})
    committed = await run_sdk({**job, "commit": True, "messages": [{"body": "committed"}]})
    assert rolled[0]["ok"] and committed[0]["ok"], (rolled, committed)
    after = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "SdkTx",
            "mode": "sync",
            "messages": [{"body": "sentinel"}],
        }
    )
    assert after[0]["ok"]
    got = await consume_until(
        ns.addr,
        "SdkTxCG",
        "SdkTx",
        lambda m: {"committed", "sentinel"} <= {x.body.decode() for x in m},
    )
    bodies = [m.body.decode() for m in got]
    assert "rolled-back" not in bodies
    assert bodies.count("committed") == 1
    [msg] = [m for m in got if m.body == b"committed"]
    assert msg.properties["UNIQ_KEY"] == committed[0]["message_id"]
    assert msg.properties["PGROUP"] == "SdkTx"  # the Proxy names the producer group by topic
