"""Property: a group of pipelined requests (one write, read together and handled by the group
path: ``RemotingServer.handle_requests`` -> ``SendMessageProcessor.handle_group`` ->
``put_message_group``, replies handed to the writer at once) is answered exactly as the same
requests sent one at a time (each alone in its read, so handled by ``handle``): the same
response code and remark for every hostile value, and the same reply fields when stored.

Hypothesis draws groups of sends (V1 and V2), batch sends, requests of other codes and oneways
with hostile values in one or two of their header fields (tests/integration/broker/
test_send_values_recover.py's strategies); one real broker answers every example, the group
first, then the same requests one by one on the same connection (so a remark naming the peer
names the same one). Topic auto-creation by the group run leaves the one-by-one run the same
answer: a creatable topic is stored both times, a refused one refused both times."""

from __future__ import annotations

import itertools
import socket
from typing import Any

import trio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from remoting import message as codec
from remoting.codes import RequestCode
from remoting.command import RPC_ONEWAY, RemotingCommand, decode_command, encode_command_bytes
from remoting.frame import FrameDecoder
from tests.integration.broker.test_send_values_recover import (
    FIELD_VALUES,
    entries,
    hostile_send,
    one_of_fields,
)
from tests.kits.brokerkit import broker_conf, send_request, start_broker

OTHER_CODES = [RequestCode.GET_BROKER_CONFIG, 9999, RequestCode.GET_ALL_TOPIC_CONFIG]
ops = st.one_of(
    st.tuples(st.just("send"), st.booleans(), one_of_fields(FIELD_VALUES)),
    st.tuples(st.just("batch"), entries, one_of_fields(FIELD_VALUES)),
    st.tuples(st.just("other"), st.sampled_from(OTHER_CODES), st.just({})),
)
bodies = itertools.count()


def build(op: tuple, oneway: bool) -> RemotingCommand:
    kind, choice, fields = op
    body = f"g{next(bodies)}".encode()
    if kind == "send":
        request = hostile_send(body, choice, fields)
    elif kind == "batch":
        batch_body = codec.encode_batch_body([(f, body, p) for f, p in choice])
        request = send_request("T1", batch_body, code=RequestCode.SEND_BATCH_MESSAGE, batch=True)
        request.ext_fields.update(fields)
    else:
        request = RemotingCommand.request(choice)
    if oneway:
        request.flag |= RPC_ONEWAY
    return request


def seen(reply: RemotingCommand) -> tuple[Any, ...]:
    """What must agree: code, remark, and the reply's field names (msgId and offsets differ)."""
    return reply.code, reply.remark, sorted(reply.ext_fields or ())


class Peer:
    """One raw connection: frames out as given, replies matched by opaque."""

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock, self.decoder = sock, FrameDecoder()
        self.replies: dict[int, RemotingCommand] = {}

    async def answers(self, requests: list[RemotingCommand]) -> list[RemotingCommand | None]:
        await self.sock.send(b"".join(encode_command_bytes(r) for r in requests))
        wanted = [r.opaque for r in requests if not r.flag & RPC_ONEWAY]
        with trio.fail_after(30):
            while not all(o in self.replies for o in wanted):
                data = await self.sock.recv(65536)
                assert data, "the broker closed the connection"
                self.decoder.receive_data(data)
                for frame in self.decoder.frames():
                    reply = decode_command(frame)
                    self.replies[reply.opaque] = reply
        return [self.replies.pop(r.opaque, None) for r in requests]


brokers: dict[str, str] = {}


@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    drawn=st.lists(st.tuples(ops, st.integers(0, 9)), min_size=2, max_size=30),
)
async def test_a_group_is_answered_as_its_requests_one_by_one(processes, tmp_path, drawn) -> None:
    key = str(tmp_path)
    if key not in brokers:  # one broker for every example of the run
        brokers[key] = start_broker(processes, broker_conf(tmp_path)).addr
    host, port = brokers[key].rsplit(":", 1)
    grouped = [build(op, roll == 0) for op, roll in drawn]
    alone = [build(op, roll == 0) for op, roll in drawn]
    for a, b in zip(grouped, alone, strict=True):  # the same values, new opaques and bodies
        b.ext_fields = a.ext_fields and dict(a.ext_fields)
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    await sock.connect((host, int(port)))
    with sock:
        peer = Peer(sock)
        together = await peer.answers(grouped)
        one_by_one = [(await peer.answers([request]))[0] for request in alone]
    for request, got, expected in zip(grouped, together, one_by_one, strict=True):
        if request.flag & RPC_ONEWAY:
            assert got is expected is None
            continue
        assert got is not None and expected is not None
        if request.code in (RequestCode.GET_BROKER_CONFIG, RequestCode.GET_ALL_TOPIC_CONFIG):
            assert got.code == expected.code  # their bodies change as topics are created
            continue
        assert seen(got) == seen(expected), (request.code, request.ext_fields)
