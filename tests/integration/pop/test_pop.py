"""5.x pop consumption over the remoting protocol against a real broker: POP_MESSAGE,
ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION, the retry topic and the DLQ, and a
4.x pull group beside a pop group on one topic."""

from __future__ import annotations

import pytest
import trio

from broker.pop import ck_info
from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_all,
    send_request,
    start_broker,
    start_cluster,
    wait_until_runtime_info,
)
from tests.kits.clikit import run_cli
from tests.kits.popkit import (
    ack_request,
    change_invisible_request,
    pop,
    pop_request,
    pop_until,
    receipts,
)


async def send(client, addr, topic, count, *, tags=None, queues=4) -> None:
    for i in range(count):
        response = await call(
            client, addr, send_request(topic, f"m{i}".encode(), tags=tags, queue_id=i % queues)
        )
        assert response.code == 0, response.remark


@pytest.fixture(scope="module")
def cluster(module_processes, tmp_path_factory):
    """Shared by the module's tests that need no broker of their own: each pops with its own
    group from its own topic (tests/README.md, "Shared clusters")."""
    return start_cluster(module_processes, tmp_path_factory.mktemp("cluster"))


async def test_pop_ack_change_invisible_and_retry(cluster) -> None:
    _, broker = cluster
    async with RemotingClient.open() as client:
        await send(client, broker.addr, "PopT", 6)
        with trio.fail_after(30):
            popped = await pop_until(client, broker.addr, "PopT", "PG1", 6)
        assert sorted(p.message.body for p in popped) == [f"m{i}".encode() for i in range(6)]
        # popped and not acked: invisible, a second pop finds nothing
        empty = await call(client, broker.addr, pop_request("PopT", "PG1", poll_ms=200))
        assert empty.code == 210  # POLLING_TIMEOUT
        for p in popped[:5]:
            request = ack_request(p, "PG1")
            # as the Proxy acks: its receipt handle, the extraInfo and the commitLogOffset
            request.ext_fields["extraInfo"] += f" {p.message.commit_log_offset}"
            assert (await call(client, broker.addr, request)).code == 0
        last = popped[5]
        changed = await call(client, broker.addr, change_invisible_request(last, "PG1", 500))
        assert changed.code == 0 and changed.ext("invisibleTime") == "500"
        with trio.fail_after(30):
            (again,) = await pop_until(client, broker.addr, "PopT", "PG1", 1)
        # redelivered from %RETRY%PG1_PopT, answered with the original topic and POP_CK
        assert again.message.body == last.message.body
        assert again.message.topic == "PopT" and again.extra.retry
        assert again.message.reconsume_times == 1
        assert again.message.properties[ck_info.FIRST_POP_TIME]
        assert (await call(client, broker.addr, ack_request(again, "PG1"))).code == 0
        # acked: nothing comes back after its invisible time
        gone = await call(client, broker.addr, pop_request("PopT", "PG1", poll_ms=1500))
        assert gone.code == 210


async def test_pop_group_beside_pull_group_and_dlq(cluster) -> None:
    _, broker = cluster
    async with RemotingClient.open() as client:
        group = RemotingCommand.request(
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            body=b'{"groupName":"PG2","consumeEnable":true,"retryMaxTimes":1,"retryQueueNums":1}',
        )
        assert (await call(client, broker.addr, group)).code == 0
        await send(client, broker.addr, "Both", 3, queues=1)
        with trio.fail_after(30):
            popped = await pop_until(client, broker.addr, "Both", "PG2", 3, invisible_ms=300)
        # a 4.x pull group has its own offsets: it reads all three, whatever the pop group did
        pulled = await pull_all(client, broker.addr, "Both", 0, group="PullG")
        assert [m.body for m in pulled] == [b"m0", b"m1", b"m2"]
        # never acked: back once (reconsumeTimes 1 = retryMaxTimes), then to %DLQ%PG2
        with trio.fail_after(30):
            again = await pop_until(client, broker.addr, "Both", "PG2", 3, invisible_ms=300)
        assert sorted(p.message.body for p in again) == sorted(p.message.body for p in popped)
        assert {p.message.reconsume_times for p in again} == {1}
        with trio.fail_after(30):
            while len(dead := await pull_all(client, broker.addr, "%DLQ%PG2", 0)) < 3:
                await trio.sleep(0.1)
        assert sorted(m.body for m in dead) == [b"m0", b"m1", b"m2"]


async def test_bad_pop_requests_get_codes(cluster) -> None:
    _, broker = cluster
    async with RemotingClient.open() as client:
        await send(client, broker.addr, "BadT", 1, queues=1)
        (p,) = await pop(client, broker.addr, "BadT", "PG3", poll_ms=3000)
        assert (await call(client, broker.addr, pop_request("NoSuch", "PG3"))).code == 17
        too_many = await call(client, broker.addr, pop_request("BadT", "PG3", max_nums=33))
        assert too_many.code == 1 and "32" in too_many.remark
        bad = ack_request(p, "PG3")
        bad.ext_fields["extraInfo"] = "0 1 two"
        assert (await call(client, broker.addr, bad)).code == 13  # MESSAGE_ILLEGAL
        bad.ext_fields["extraInfo"] = p.extra_info.replace(f" {p.extra.revive_qid} ", " 77 ", 1)
        assert (await call(client, broker.addr, bad)).code == 13
        far = ack_request(p, "PG3")
        far.ext_fields["offset"] = "999999"
        assert (await call(client, broker.addr, far)).code == 208  # NO_MESSAGE
        # a group whose pop retry topic could not be a topic (over 127 characters)
        long_group = await call(client, broker.addr, pop_request("BadT", "G" * 120))
        assert long_group.code == 1 and "pop retry/DLQ topic" in long_group.remark
        negative = pop_request("BadT", "PG3")
        negative.ext_fields["invisibleTime"] = "-5"
        assert (await call(client, broker.addr, negative)).code == 1
        assert (await call(client, broker.addr, ack_request(p, "PG3"))).code == 0
    assert "Traceback" not in broker.log_path.read_text()


async def test_consumer_progress_shows_pop_inflight(cluster) -> None:
    ns, broker = cluster
    async with RemotingClient.open() as client:
        await send(client, broker.addr, "Flight", 4, queues=1)
        with trio.fail_after(30):
            popped = await pop_until(client, broker.addr, "Flight", "PG4", 4)
        popped.sort(key=lambda p: p.message.queue_offset)
        for p in (popped[0], popped[2]):
            assert (await call(client, broker.addr, ack_request(p, "PG4"))).code == 0
    # -t: a pop group has no %RETRY%PG4 route to be found by (its members are the Proxy's)
    done = run_cli("client.mqadmin", "consumerProgress", "-n", ns.addr, "-g", "PG4", "-t", "Flight")
    assert done.returncode == 0, done.stderr
    assert "#Inflight" in done.stdout
    assert "Consume Inflight Total: 3" in done.stdout  # offsets 1..3 popped, 1 and 3 unacked


async def test_notification_waits_for_a_message(cluster) -> None:
    _, broker = cluster

    def notification(poll_ms: int) -> RemotingCommand:
        fields = {"consumerGroup": "PG5", "topic": "Note", "queueId": "-1"}
        fields |= {"pollTime": str(poll_ms), "bornTime": "0"}
        return RemotingCommand.request(RequestCode.NOTIFICATION, fields)

    async with RemotingClient.open() as client:
        await send(client, broker.addr, "Note", 1, queues=1)
        (p,) = await pop_until(client, broker.addr, "Note", "PG5", 1)
        assert (await call(client, broker.addr, ack_request(p, "PG5"))).code == 0
        quiet = await call(client, broker.addr, notification(200))
        assert quiet.code == 0 and quiet.ext("hasMsg") == "false"
        async with trio.open_nursery() as nursery:
            answer: list[RemotingCommand] = []

            async def ask() -> None:
                answer.append(await call(client, broker.addr, notification(20_000)))

            nursery.start_soon(ask)
            await trio.sleep(0.3)  # let the notification start waiting (either way it passes)
            await send(client, broker.addr, "Note", 1, queues=1)
        assert answer[0].code == 0 and answer[0].ext("hasMsg") == "true"


async def test_pop_on_a_sync_flush_broker(processes, tmp_path) -> None:
    """SYNC_FLUSH: the pop answers once its checkpoint is flushed (the path is exercised; a
    power loss is not simulated here)."""
    broker = start_broker(processes, broker_conf(tmp_path, flushDiskType="SYNC_FLUSH"))
    async with RemotingClient.open() as client:
        await send(client, broker.addr, "SyncPop", 2, queues=1)
        with trio.fail_after(30):
            popped = await pop_until(client, broker.addr, "SyncPop", "PG6", 2)
        for p in popped:
            assert (await call(client, broker.addr, ack_request(p, "PG6"))).code == 0


async def test_short_polling_leaves_a_waiting_pop_to_its_poll_time(processes, tmp_path) -> None:
    """longPollingEnable=false, as 5.x's broker: the store calls no arrival listener, so a pop
    waiting for a message is not woken by one; it looks again at its pollTime and takes it."""
    broker = start_broker(processes, broker_conf(tmp_path, longPollingEnable="false"))
    async with RemotingClient.open() as client:
        await send(client, broker.addr, "ShortPop", 1, queues=1)
        (p,) = await pop_until(client, broker.addr, "ShortPop", "PG9", 1)
        assert (await call(client, broker.addr, ack_request(p, "PG9"))).code == 0
        answer: list[RemotingCommand] = []

        async def waiting_pop() -> None:
            request = pop_request("ShortPop", "PG9", poll_ms=2_000)
            answer.append(await call(client, broker.addr, request, timeout_s=30))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting_pop)
            await wait_until_runtime_info(client, broker.addr, "popPollingCount", "1")
            await send(client, broker.addr, "ShortPop", 1, queues=1)
            # still waiting: the arrival did not answer it
            await wait_until_runtime_info(client, broker.addr, "popPollingCount", "1")
        assert [m.message.body for m in receipts(answer[0])] == [b"m0"]


async def test_peek_changes_nothing(cluster) -> None:
    _, broker = cluster

    def peek() -> RemotingCommand:
        fields = {"consumerGroup": "PG7", "topic": "PeekT", "queueId": "-1", "maxMsgNums": "32"}
        return RemotingCommand.request(RequestCode.PEEK_MESSAGE, fields)

    async with RemotingClient.open() as client:
        await send(client, broker.addr, "PeekT", 2, queues=1)
        for _ in range(2):  # peeked twice: the same two, nothing popped
            seen = await call(client, broker.addr, peek())
            assert seen.code == 0 and seen.ext("restNum") == "2"
            assert sorted(m.body for m in codec.decode_messages(seen.body)) == [b"m0", b"m1"]
        with trio.fail_after(30):
            await pop_until(client, broker.addr, "PeekT", "PG7", 2)
        assert (await call(client, broker.addr, peek())).code == 19  # PULL_NOT_FOUND


async def test_a_new_group_in_max_mode_starts_at_a_queue_still_in_memory(cluster) -> None:
    """As the Proxy pops (initMode MAX): a group's first pop of a queue whose first message is
    still in memory starts there (5.x's initPopOffsetByCheckMsgInMem), so what was sent before
    the group's first receive is not skipped."""
    _, broker = cluster
    async with RemotingClient.open() as client:
        await send(client, broker.addr, "PopMaxT", 3, queues=1)
        with trio.fail_after(30):
            popped = await pop_until(client, broker.addr, "PopMaxT", "PG8", 3, init_mode=1)
        assert sorted(p.message.body for p in popped) == [b"m0", b"m1", b"m2"]
