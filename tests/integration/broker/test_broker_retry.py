"""Delayed messages and consumer retries: CONSUMER_SEND_MSG_BACK puts a message into
``%RETRY%group`` after its delay, and into ``%DLQ%group`` once the retries are used up."""

from __future__ import annotations

import trio

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import CURRENT_VERSION, RequestCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import broker_conf, call, pull_all, send_request, start_broker

FAST_LEVELS = " ".join(["1s"] * 18)


async def wait_for_messages(client, addr, topic, count) -> list[codec.MessageExt]:
    with trio.fail_after(15):
        while True:
            messages = await pull_all(client, addr, topic, 0, group="Reader")
            if len(messages) >= count:
                return messages
            await trio.sleep(0.05)


def send_back(offset: int, group: str, delay_level: int = 0, max_times: int | None = None):
    fields = {"offset": str(offset), "group": group, "delayLevel": delay_level}
    if max_times is not None:
        fields["maxReconsumeTimes"] = str(max_times)
    request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)
    request.version = CURRENT_VERSION
    return request


async def test_delayed_message_arrives_after_its_level(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path, messageDelayLevel=FAST_LEVELS))
    async with RemotingClient.open() as client:
        sent = await call(
            client, broker.addr, send_request("Later", b"soon", properties={"DELAY": "2"})
        )
        assert sent.code == 0
        assert await pull_all(client, broker.addr, "Later", 0) == []
        (message,) = await wait_for_messages(client, broker.addr, "Later", 1)
        assert message.body == b"soon" and "DELAY" not in message.properties


async def test_send_back_retries_then_dead_letters(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path, messageDelayLevel=FAST_LEVELS))
    async with RemotingClient.open() as client:
        sent = await call(client, broker.addr, send_request("Work", b"job", tags="T"))
        offset = codec.decode_offset_msg_id(sent.ext("msgId")).phys_offset
        assert (await call(client, broker.addr, send_back(offset, "G"))).code == 0
        (retry,) = await wait_for_messages(client, broker.addr, "%RETRY%G", 1)
        assert retry.body == b"job" and retry.reconsume_times == 1
        assert retry.properties["RETRY_TOPIC"] == "Work"
        assert retry.properties["ORIGIN_MESSAGE_ID"] == sent.ext("msgId")
        # Past maxReconsumeTimes the message goes to the dead-letter queue at once.
        response = await call(
            client, broker.addr, send_back(retry.commit_log_offset, "G", max_times=1)
        )
        assert response.code == 0
        (dead,) = await wait_for_messages(client, broker.addr, "%DLQ%G", 1)
        assert dead.body == b"job" and dead.properties["RETRY_TOPIC"] == "Work"
        # both sends back are counted against the topic first sent to, as Java's broker
        stats = RemotingCommand.request(
            RequestCode.VIEW_BROKER_STATS_DATA,
            {"statsName": "SNDBCK_PUT_NUMS", "statsKey": "Work@G"},
        )
        assert (await call(client, broker.addr, stats)).code == 0


async def test_a_count_at_java_int_max_wraps_as_java_does(processes, tmp_path) -> None:
    # Java adds one to an int: 2^31 - 1 retries become -2^31 in the dead-letter record, where
    # a Python int would not fit the record's field and the request would fail.
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        request = send_request("Worn", b"old", reconsume_times=2**31 - 1)
        sent = await call(client, broker.addr, request)
        offset = codec.decode_offset_msg_id(sent.ext("msgId")).phys_offset
        assert (await call(client, broker.addr, send_back(offset, "G"))).code == 0
        (dead,) = await wait_for_messages(client, broker.addr, "%DLQ%G", 1)
        assert dead.body == b"old" and dead.reconsume_times == -(2**31)
