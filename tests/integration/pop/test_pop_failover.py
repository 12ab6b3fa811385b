"""Pop state across a promotion: checkpoints and acks are revive-log records in the replicated
CommitLog, the pop group's and the revive queues' offsets reach the slave with its consumer
offset sync. A slave promoted after its master's kill -9 redelivers the messages popped and not
acked once their invisible time passes (as retries), never the acked ones, and a receipt from
the old master still acks on it (the brokerName and reviveQid it names are the same)."""

from __future__ import annotations

import trio

from remoting import fastjson
from remoting.body import ConsumeStats
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body
from tests.kits.brokerkit import call, send_request, start_broker, start_namesrv
from tests.kits.hakit import promote_slave, start_pair, wait_converged, wait_until
from tests.kits.popkit import ack_request, pop_request, pop_until


def pop_offsets(store, key: str) -> int:
    path = store / "config" / "consumerOffset.json"
    text = path.read_text() if path.exists() else "{}"
    return sum(fastjson.loads(text).get("offsetTable", {}).get(key, {}).values())


async def oldest_unacked(client: RemotingClient, addr: str) -> int:
    """GET_CONSUME_STATS: a pop group's consumerOffset is its oldest message in flight."""
    request = RemotingCommand.request(
        RequestCode.GET_CONSUME_STATS, {"consumerGroup": "PG", "topic": "PopFo"}
    )
    stats = decode_body(ConsumeStats, (await call(client, addr, request)).body)
    return next(w.consumer_offset for mq, w in stats.offset_table.items() if mq.queue_id == 0)


async def test_a_promoted_slave_redelivers_unacked_pops_only(processes, tmp_path) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    # The slave starts after the pops: its first config sync (at once) copies their offsets.
    pair = start_pair(processes, tmp_path, namesrv.addr, start_slave=False)
    master = pair.master.addr
    async with RemotingClient.open() as client:
        for i in range(10):
            response = await call(client, master, send_request("PopFo", b"p%d" % i, queue_id=0))
            assert response.code == 0
        with trio.fail_after(30):
            popped = await pop_until(
                client, master, "PopFo", "PG", 3, invisible_ms=3000, max_nums=3
            )
            # held by a consumer across the failover: invisible long after the promotion
            popped += await pop_until(
                client, master, "PopFo", "PG", 1, invisible_ms=600_000, max_nums=1
            )
            popped += await pop_until(
                client, master, "PopFo", "PG", 6, invisible_ms=3000, max_nums=4
            )
        assert [p.message.body for p in popped] == [b"p%d" % i for i in range(10)]
        for p in popped[:2]:
            assert (await call(client, master, ack_request(p, "PG"))).code == 0

        slave = start_broker(processes, pair.slave_conf, "slave")

        async def offsets_copied() -> bool:
            return pop_offsets(pair.slave_store, "PopFo@PG") == 10

        await wait_until(offsets_copied, 30, "the slave to copy the pop group's offsets")
        await wait_converged(client, master, slave.addr)
        promoted = promote_slave(processes, pair, slave, tmp_path, namesrv.addr).addr
        with trio.fail_after(30):
            again = await pop_until(client, promoted, "PopFo", "PG", 7)
        unacked = [popped[2], *popped[4:]]
        assert sorted(p.message.body for p in again) == sorted(p.message.body for p in unacked)
        assert all(p.extra.retry and p.message.reconsume_times == 1 for p in again)
        for p in again:
            assert (await call(client, promoted, ack_request(p, "PG"))).code == 0
        # p3, still invisible, is in flight on the promoted slave; the old receipt acks it
        assert await oldest_unacked(client, promoted) == 3
        assert (await call(client, promoted, ack_request(popped[3], "PG"))).code == 0
        assert await oldest_unacked(client, promoted) == 10
        rest = await call(client, promoted, pop_request("PopFo", "PG", poll_ms=2000))
        assert rest.code == 210  # neither the acked three nor a second copy of the seven
