"""What the fuzz campaigns found, each kept as a plain regression test against a real broker
(the shrunk case, written out by hand)."""

from __future__ import annotations

import json
import struct

import trio

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, decode_command
from remoting.frame import FrameDecoder
from tests.fuzz import wire
from tests.fuzz.verdict import log_problems
from tests.kits.brokerkit import (
    broker_conf,
    call,
    send_request,
    start_broker,
    start_namesrv,
)


async def test_a_lone_surrogate_in_a_json_body_is_refused_and_the_connection_serves_on(
    processes, tmp_path
) -> None:
    """seed 1, w0/1159/b: CHECK_CLIENT_CONFIG whose expressionType is "\\ud800". The remark
    quoting it could not be encoded: no answer, a traceback, the client timing out."""
    broker = start_broker(processes, broker_conf(tmp_path))
    subscription = {"topic": "T", "subString": "a", "expressionType": "\ud800"}
    body = json.dumps({"group": "G", "subscriptionData": subscription}).encode()
    async with RemotingClient.open() as client:
        request = RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, body)
        response = await call(client, broker.addr, request, timeout_s=5)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert "surrogate" in (response.remark or "")
        assert (await call(client, broker.addr, send_request("T", b"after"))).code == 0
    assert log_problems(broker.log_path) == []


async def test_a_send_back_whose_retry_topic_no_record_can_hold_is_refused(
    processes, tmp_path
) -> None:
    """seed 1: CONSUMER_SEND_MSG_BACK for a group of 128 characters. Its %RETRY% topic (135) is
    a legal directory name, but no record holds a topic past 127 bytes: Java's store refuses it
    before the message is parked (checkMessage); ours parked it in SCHEDULE_TOPIC_XXXX, could
    never deliver it, and logged an ERROR each time a message arrived on that level."""
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        sent = await call(client, broker.addr, send_request("T", b"retry me"))
        phys = codec.decode_offset_msg_id(sent.ext("msgId") or "").phys_offset
        fields = {"offset": str(phys), "group": "G" * 128, "delayLevel": "1"}
        back = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)
        response = await call(client, broker.addr, back)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == "MESSAGE_ILLEGAL"
        fields["group"] = "G" * 120  # %RETRY% + 120 = 127: still one record's topic
        again = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)
        response = await call(client, broker.addr, again)
        assert response.code == ResponseCode.SUCCESS, response.remark
    assert broker.terminate() == 0
    assert log_problems(broker.log_path) == []


async def test_a_json_number_past_a_java_long_is_refused_not_rounded_into_range(
    processes, tmp_path
) -> None:
    """seed 3, sweep/b/14558: SEARCH_OFFSET_BY_TIMESTAMP with timestamp -9223372036854775809
    as a JSON number (C++ style) was read as a float, rounded to -2^63 and accepted."""
    broker = start_broker(processes, broker_conf(tmp_path))
    fields = {"topic": "T", "queueId": 0, "timestamp": -(2**63) - 1}
    header = wire.json_header(
        wire.request_fields(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, fields, 7)
    )
    async with await trio.open_tcp_stream("127.0.0.1", broker.port) as stream:
        await stream.send_all(wire.framed(wire.JSON_TYPE, header))
        decoder = FrameDecoder()
        with trio.fail_after(10):
            while (frame := decoder.next_frame()) is None:
                decoder.receive_data(await stream.receive_some(65536))
    response = decode_command(frame)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "timestamp='-9223372036854775809' is out of the range" in (response.remark or "")


async def test_fake_slaves_on_the_ha_port_are_a_few_warnings_not_an_error_each(
    processes, tmp_path
) -> None:
    """seed 5, structural ha-port: a report past the master's end was logged at ERROR, once
    per connection, for anyone who can reach the HA port; negative ones at WARNING, unlimited."""
    broker = start_broker(processes, broker_conf(tmp_path))
    for offset in [2**62] * 10 + [-1] * 10:
        async with await trio.open_tcp_stream("127.0.0.1", broker.port + 1) as stream:
            await stream.send_all(struct.pack(">q", offset))
            with trio.fail_after(10):
                while await stream.receive_some(65536):
                    pass  # refused: the master closes the connection
    assert broker.terminate() == 0
    assert log_problems(broker.log_path) == []
    log = broker.log_path.read_text()
    assert 1 <= log.count("refusing it") + log.count("negative offset") <= 5


async def test_a_value_from_the_wire_cannot_forge_a_log_line(processes, tmp_path) -> None:
    """seed 1, 35-minute campaign: KV namespaces, keys and values, broker names and client
    ids reached the logs as they were, newlines and NULs included: any client could write an
    ERROR line, or a traceback, into a server's log."""
    namesrv = start_namesrv(processes, tmp_path)
    forged = "v\n2026-01-01 00:00:00,000 ERROR namesrv: Traceback (most recent call last):"
    fields = {"namespace": "N", "key": "k\x00", "value": forged}
    async with RemotingClient.open() as client:
        put = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, fields)
        assert (await call(client, namesrv.addr, put)).code == ResponseCode.SUCCESS
    assert namesrv.terminate() == 0
    assert log_problems(namesrv.log_path) == []
    assert "\\n2026-01-01 00:00:00,000 ERROR" in namesrv.log_path.read_text()
