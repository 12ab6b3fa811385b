"""Send, pull, long polling, lookups and offsets against a real ``mqbroker`` process."""

from __future__ import annotations

import json

import trio

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.conftest import INTEROP_FRAMES
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_all,
    pull_request,
    send_request,
    start_broker,
    wait_until_runtime_info,
)


async def test_send_v1_v2_and_batch_then_pull_returns_the_stored_messages(
    processes, tmp_path
) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        first = await call(
            client,
            broker.addr,
            send_request("Orders", b"one", tags="A", keys="k1", code=RequestCode.SEND_MESSAGE),
        )
        second = await call(client, broker.addr, send_request("Orders", b"two", tags="B"))
        batch_body = codec.encode_batch_body(
            [(0, f"b{i}".encode(), f"UNIQ_KEY\x01U{i}\x02TAGS\x01A") for i in range(3)]
        )
        batch = await call(
            client,
            broker.addr,
            send_request("Orders", batch_body, code=RequestCode.SEND_BATCH_MESSAGE, batch=True),
        )
        assert [first.code, second.code, batch.code] == [0, 0, 0]
        assert [first.ext("queueOffset"), second.ext("queueOffset"), batch.ext("queueOffset")] == [
            "0",
            "1",
            "2",
        ]
        assert len(batch.ext("msgId").split(",")) == 3
        stored = codec.decode_offset_msg_id(first.ext("msgId"))
        assert stored.addr == broker.addr and stored.phys_offset == 0
        messages = await pull_all(client, broker.addr, "Orders", 0)
        assert [m.body for m in messages] == [b"one", b"two", b"b0", b"b1", b"b2"]
        assert [m.queue_offset for m in messages] == [0, 1, 2, 3, 4]
        assert messages[0].keys == "k1" and messages[0].store_host == broker.addr
        # as Java 4.9's broker stores them: CLUSTER added, a single message's WAIT left out
        assert all(m.properties["CLUSTER"] == "TestCluster" for m in messages)
        assert "WAIT" not in messages[0].properties and "WAIT" not in messages[1].properties
        tagged = await pull_all(client, broker.addr, "Orders", 0, subscription="B")
        assert [m.body for m in tagged] == [b"two"]


async def test_long_poll_answers_when_a_message_arrives_and_at_the_timeout(
    processes, tmp_path
) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Poll", b"m0"))).code == 0
        held = pull_request("Poll", 0, 1, suspend_ms=20_000)
        results: list[RemotingCommand] = []

        async def pull() -> None:
            results.append(await call(client, broker.addr, held, timeout_s=30))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pull)
            # The pull is held (nothing past offset 1); a new message must release it.
            await wait_until_held(client, broker.addr)
            assert (await call(client, broker.addr, send_request("Poll", b"m1"))).code == 0
        assert results[0].code == ResponseCode.SUCCESS
        assert results[0].remark == "FOUND"  # the status's name, as Java's broker sets it
        assert [m.body for m in codec.decode_messages(results[0].body)] == [b"m1"]
        found = await call(client, broker.addr, pull_request("Poll", 0, 0))
        assert (found.code, found.remark) == (ResponseCode.SUCCESS, "FOUND")
        timed_out = await call(client, broker.addr, pull_request("Poll", 0, 2, suspend_ms=300))
        assert timed_out.code == ResponseCode.PULL_NOT_FOUND
        assert timed_out.ext("nextBeginOffset") == "2"


async def test_held_pulls_of_one_connection_answer_together_and_a_closed_ones_drop(
    processes, tmp_path
) -> None:
    # A held pull is a record, not a task: two on one connection are both answered from the
    # arrival of one message, and a connection closed while its pull is held drops it.
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Poll", b"m0"))).code == 0
        async with RemotingClient.open() as leaving, trio.open_nursery() as nursery:
            nursery.start_soon(call, leaving, broker.addr,
                               pull_request("Poll", 0, 1, suspend_ms=60_000), 70)  # fmt: skip
            await wait_until_held(client, broker.addr)
            nursery.cancel_scope.cancel()
        await wait_until_held(client, broker.addr, count=0)
        results: list[RemotingCommand] = []

        async def pull(group: str) -> None:
            request = pull_request("Poll", 0, 1, group=group, suspend_ms=20_000)
            results.append(await call(client, broker.addr, request, timeout_s=30))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pull, "CG")
            nursery.start_soon(pull, "CG2")
            await wait_until_held(client, broker.addr, count=2)
            assert (await call(client, broker.addr, send_request("Poll", b"m1"))).code == 0
        assert [r.code for r in results] == [ResponseCode.SUCCESS] * 2
        for response in results:
            assert [m.body for m in codec.decode_messages(response.body)] == [b"m1"]
            assert response.ext("nextBeginOffset") == "2"
        await wait_until_held(client, broker.addr, count=0)


async def test_short_polling_holds_past_an_arrival_until_its_check(processes, tmp_path) -> None:
    # longPollingEnable=false, as Java's broker: the store calls no arrival listener, a held
    # pull waits shortPollingTimeMills (not its own suspend timeout) and then finds the message.
    conf = broker_conf(tmp_path, longPollingEnable="false", shortPollingTimeMills=2000)
    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Short", b"m0"))).code == 0
        results: list[RemotingCommand] = []

        async def pull() -> None:
            request = pull_request("Short", 0, 1, suspend_ms=60_000)
            results.append(await call(client, broker.addr, request, timeout_s=30))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pull)
            await wait_until_held(client, broker.addr)
            assert (await call(client, broker.addr, send_request("Short", b"m1"))).code == 0
            await wait_until_held(client, broker.addr)  # the arrival did not answer it
        assert results[0].code == ResponseCode.SUCCESS
        assert [m.body for m in codec.decode_messages(results[0].body)] == [b"m1"]


async def wait_until_held(client: RemotingClient, addr: str, count: int = 1) -> None:
    await wait_until_runtime_info(client, addr, "pullHeldCount", str(count))


async def test_queries_by_key_by_id_and_queue_offsets(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        sent = [
            await call(client, broker.addr, send_request("Q", f"m{i}".encode(), keys=f"order-{i}"))
            for i in range(3)
        ]
        query = RemotingCommand.request(
            RequestCode.QUERY_MESSAGE,
            {
                "topic": "Q",
                "key": "order-1",
                "maxNum": "32",
                "beginTimestamp": "0",
                "endTimestamp": str(2**62),
            },
        )
        found = await call(client, broker.addr, query)
        assert found.code == 0
        assert [m.body for m in codec.decode_messages(found.body)] == [b"m1"]
        phys = codec.decode_offset_msg_id(sent[2].ext("msgId")).phys_offset
        view = await call(
            client,
            broker.addr,
            RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(phys)}),
        )
        assert codec.decode_message(view.body).body == b"m2"
        offsets = {}
        for code in (RequestCode.GET_MIN_OFFSET, RequestCode.GET_MAX_OFFSET):
            response = await call(
                client, broker.addr, RemotingCommand.request(code, {"topic": "Q", "queueId": "0"})
            )
            offsets[code] = response.ext("offset")
        assert offsets == {RequestCode.GET_MIN_OFFSET: "0", RequestCode.GET_MAX_OFFSET: "3"}
        missing = RemotingCommand.request(
            RequestCode.QUERY_MESSAGE,
            {
                "topic": "Q",
                "key": "nope",
                "maxNum": "32",
                "beginTimestamp": "0",
                "endTimestamp": str(2**62),
            },
        )
        assert (await call(client, broker.addr, missing)).code == ResponseCode.QUERY_NOT_FOUND


async def test_consumer_offsets_survive_a_restart_and_a_new_group_starts_at_zero(
    processes, tmp_path
) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)

    def query(group: str, topic: str = "T", queue_id: int = 0) -> RemotingCommand:
        return RemotingCommand.request(
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": group, "topic": topic, "queueId": queue_id},
        )

    async with RemotingClient.open() as client:
        for _ in range(5):
            await call(client, broker.addr, send_request("T", b"x"))
        fresh = await call(client, broker.addr, query("NewGroup"))
        assert (fresh.code, fresh.ext("offset")) == (0, "0")
        update = RemotingCommand.request(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "G", "topic": "T", "queueId": 0, "commitOffset": "3"},
        )
        assert (await call(client, broker.addr, update)).code == 0
        # Java's periodic persist commits oneway; the C++ client two-way, queueId a JSON number
        oneway = RemotingCommand.request(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "G", "topic": "T", "queueId": "1", "commitOffset": "2"},
            oneway=True,
        )
        await client.invoke_oneway(broker.addr, oneway)
        one = await call(client, broker.addr, query("G", queue_id=1))
        assert (one.code, one.ext("offset")) == (0, "2")
        assert await cpp_commit(broker.addr) == 0
        cpp = await call(client, broker.addr, query("GCap", "TopicCap"))
        assert (cpp.code, cpp.ext("offset")) == (0, "1")
        # A pull carrying commitOffset commits too (piggyback).
        await call(client, broker.addr, pull_request("T", 0, 4, group="G2", commit_offset=4))
    assert broker.terminate() == 0
    broker = start_broker(processes, conf, "broker-again")
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, query("G"))).ext("offset") == "3"
        assert (await call(client, broker.addr, query("G2"))).ext("offset") == "4"
        pulled = await pull_all(client, broker.addr, "T", 0)
        assert len(pulled) == 5


async def cpp_commit(addr: str) -> int:
    """The C++ client's captured UPDATE_CONSUMER_OFFSET (GCap, TopicCap, queue 0, offset 1)
    sent as its bytes; the reply's code."""
    frame = (INTEROP_FRAMES / "cpp/fake-produce-then-consume/111-c2-in-15.bin").read_bytes()
    host, port = addr.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = await stream.receive_some()
            assert chunk, "the broker closed the connection"
            data += chunk
    header_length = int.from_bytes(data[4:8], "big") & 0xFFFFFF
    return int(json.loads(data[8 : 8 + header_length])["code"])


async def test_kill_9_keeps_acknowledged_messages_and_auto_created_topics(
    processes, tmp_path
) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        acked = []
        for i in range(200):
            response = await call(client, broker.addr, send_request("Born", f"m{i}".encode()))
            assert response.code == 0
            acked.append(f"m{i}".encode())
    broker.kill()
    broker = start_broker(processes, conf, "broker-after-kill")
    async with RemotingClient.open() as client:
        assert [m.body for m in await pull_all(client, broker.addr, "Born", 0)] == acked
        more = await call(client, broker.addr, send_request("Born", b"after"))
        assert (more.code, more.ext("queueOffset")) == (0, "200")
