"""One reading of a POP_MESSAGE response (client/pop.py popped_messages), shared by our client
and mqproxy: extraInfo from the header or from POP_CK, an orderly pop's consumed counts, and
a header that does not cover a message refused."""

from __future__ import annotations

import pytest

from client.pop import popped_messages, receipts
from remoting import message as m
from remoting import pop_wire
from remoting.command import RemotingCommand
from remoting.record import pack_record_into, record_size


def record(queue_id: int, queue_offset: int, properties: dict[str, str]) -> bytes:
    body, topic, props = b"b", b"T", m.properties_to_string(properties).encode()
    address = m.host_bytes("127.0.0.1")
    size = record_size(len(body), len(topic), len(props), born_v6=False, store_v6=False)
    buffer = bytearray(size)
    pack_record_into(
        buffer,
        0,
        total_size=size,
        body_crc=m.body_crc(body),
        queue_id=queue_id,
        flag=0,
        queue_offset=queue_offset,
        phys_offset=1000 + queue_offset,
        sys_flag=0,
        born_timestamp=1,
        born_address=address,
        born_port=1,
        store_timestamp=1,
        store_address=address,
        store_port=10911,
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        topic=topic,
        properties=props,
    )
    return bytes(buffer)


def response(body: bytes, **ext: str) -> RemotingCommand:
    fields = {"popTime": "5000", "invisibleTime": "60000", "reviveQid": "999", **ext}
    return RemotingCommand.request(0, fields, body=body).make_response(ext_fields=fields, body=body)


def test_header_pop_ck_and_orderly_counts() -> None:
    retried = pop_wire.ExtraInfo(
        ck_queue_offset=3,
        pop_time=4000,
        invisible_time=30000,
        revive_qid=1,
        retry=True,
        broker_name="b",
        queue_id=0,
        queue_offset=3,
    ).encode()
    body = record(1, 7, {}) + record(1, 8, {}) + record(0, 3, {pop_wire.POP_CK: retried})
    popped = response(
        body,
        startOffsetInfo="0 1 7",
        orderCountInfo="0 qo1%7 2;0 1 1",  # offset 7 consumed twice; the queue's least is 1
    )
    found = popped_messages(popped, "broker-a")
    extras = [extra for _, extra in found]
    assert [(e.queue_id, e.queue_offset, e.ck_queue_offset) for e in extras] == [
        (1, 7, 7),
        (1, 8, 7),
        (0, 3, 3),
    ]
    assert extras[0].broker_name == "broker-a" and extras[0].pop_time == 5000
    assert extras[2].retry and extras[2].broker_name == "b"
    assert [msg.reconsume_times for msg, _ in found] == [2, 1, 0]
    # our client reads the same: the extraInfo strings, the counts
    client = receipts(popped, "broker-a")
    assert [p.extra_info for p in client] == [e.encode() for e in extras[:2]] + [retried]
    assert [p.message.reconsume_times for p in client] == [2, 1, 0]


def test_a_message_the_header_does_not_cover_is_refused() -> None:
    with pytest.raises(ValueError, match="queue 2"):
        popped_messages(response(record(2, 0, {}), startOffsetInfo="0 1 7"), "broker-a")
