"""Pop checkpoints survive kill -9: messages popped and not acked when the broker died come
back once their invisible time passes after the restart; acked ones do not."""

from __future__ import annotations

import trio

from remoting import fastjson
from remoting.client import RemotingClient
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker
from tests.kits.hakit import wait_until
from tests.kits.popkit import ack_request, pop_request, pop_until


async def test_unacked_pops_are_redelivered_after_kill_9(processes, tmp_path) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)
    offsets = tmp_path / "store-broker-a-0" / "config" / "consumerOffset.json"
    async with RemotingClient.open() as client:
        for i in range(10):
            response = await call(client, broker.addr, send_request("Durable", b"d%d" % i))
            assert response.code == 0
        with trio.fail_after(30):
            popped = await pop_until(
                client, broker.addr, "Durable", "DG", 10, invisible_ms=2000, max_nums=4
            )
        for p in popped[:3]:
            assert (await call(client, broker.addr, ack_request(p, "DG"))).code == 0

        async def pop_offset_persisted() -> bool:
            text = offsets.read_text() if offsets.exists() else "{}"
            table = fastjson.loads(text).get("offsetTable", {})
            return sum(table.get("Durable@DG", {}).values()) == 10

        await wait_until(pop_offset_persisted, 30, "the pop group's offsets to be persisted")
        broker.kill()
    broker = start_broker(processes, conf, "broker-again")
    async with RemotingClient.open() as client:
        with trio.fail_after(30):
            again = await pop_until(client, broker.addr, "Durable", "DG", 7)
        assert sorted(p.message.body for p in again) == sorted(p.message.body for p in popped[3:])
        assert all(p.extra.retry and p.message.reconsume_times == 1 for p in again)
        for p in again:
            assert (await call(client, broker.addr, ack_request(p, "DG"))).code == 0
        # nothing else: neither the acked three nor a second copy of the seven
        rest = await call(client, broker.addr, pop_request("Durable", "DG", poll_ms=2500))
        assert rest.code == 210
