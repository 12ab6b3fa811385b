"""Values at the very ends of their Java range pass the header decoder, so every processor must
cope with them: each request code that has a header is sent, field by field, the lowest and
highest value its type admits (and 0, -1) with every other field plain. Each gets an answer, the
servers keep serving, and nothing is logged as a traceback."""

from __future__ import annotations

import pytest

from remoting import headers as H
from remoting.client import RemotingClient
from remoting.codes import CURRENT_VERSION, RequestCode
from remoting.command import RemotingCommand
from remoting.header_codec import FieldSpec, field_specs
from remoting.wire_types import Length, OneOf, Range
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker, start_namesrv

C = RequestCode
BROKER = {
    C.SEND_MESSAGE: H.SendMessageRequestHeader,
    C.SEND_MESSAGE_V2: H.SendMessageRequestHeaderV2,
    C.SEND_REPLY_MESSAGE_V2: H.SendMessageRequestHeaderV2,
    C.PULL_MESSAGE: H.PullMessageRequestHeader,
    C.QUERY_MESSAGE: H.QueryMessageRequestHeader,
    C.QUERY_CONSUMER_OFFSET: H.QueryConsumerOffsetRequestHeader,
    C.UPDATE_CONSUMER_OFFSET: H.UpdateConsumerOffsetRequestHeader,
    C.SEARCH_OFFSET_BY_TIMESTAMP: H.SearchOffsetRequestHeader,
    C.GET_MAX_OFFSET: H.GetMaxOffsetRequestHeader,
    C.GET_MIN_OFFSET: H.GetMinOffsetRequestHeader,
    C.GET_EARLIEST_MSG_STORETIME: H.GetEarliestMsgStoretimeRequestHeader,
    C.VIEW_MESSAGE_BY_ID: H.ViewMessageRequestHeader,
    C.CONSUMER_SEND_MSG_BACK: H.ConsumerSendMsgBackRequestHeader,
    C.END_TRANSACTION: H.EndTransactionRequestHeader,
    C.UPDATE_AND_CREATE_TOPIC: H.CreateTopicRequestHeader,
    C.INVOKE_BROKER_TO_RESET_OFFSET: H.ResetOffsetRequestHeader,
    C.QUERY_CONSUME_QUEUE: H.QueryConsumeQueueRequestHeader,
}
NAMESRV = {
    C.REGISTER_BROKER: H.RegisterBrokerRequestHeader,
    C.UNREGISTER_BROKER: H.UnRegisterBrokerRequestHeader,
    C.QUERY_DATA_VERSION: H.QueryDataVersionRequestHeader,
}


def plain(spec: FieldSpec) -> str:
    """A value every field of that type takes."""
    for mark in spec.marks:
        if isinstance(mark, OneOf):
            return sorted(mark.choices)[0]
        if isinstance(mark, Range):
            return str(max(mark.low, min(1, mark.high)))
        if isinstance(mark, Length):
            return "N"
    return {str: "T1", bool: "false"}.get(spec.base, "0")


def extremes(cls: type) -> list[tuple[str, dict[str, str]]]:
    specs = field_specs(cls)
    base = {s.wire: plain(s) for s in specs}
    out = []
    for spec in specs:
        for mark in spec.marks:
            if isinstance(mark, Range):
                for value in {mark.low, mark.high, max(mark.low, 0), max(mark.low, -1)}:
                    out.append((spec.wire, {**base, spec.wire: str(value)}))
    return out


async def answered_without_traceback(server, cases, extra=None) -> None:
    async with RemotingClient.open() as client:
        for code, cls in cases.items():
            for field, fields in extremes(cls):
                request = RemotingCommand.request(code, fields, b"body")
                request.version = CURRENT_VERSION
                if code == C.END_TRANSACTION:  # Java sends it oneway; unknown decisions get none
                    await client.invoke_oneway(server.addr, request)
                    continue
                response = await call(client, server.addr, request)
                assert response.is_response, (code, field)
        if extra is not None:
            await extra(client)
    assert "Traceback" not in server.log_path.read_text(errors="replace")


@pytest.mark.parametrize("kind", ["broker", "namesrv"])
async def test_the_ends_of_every_range_are_answered(processes, tmp_path, kind) -> None:
    if kind == "namesrv":
        server = start_namesrv(processes, tmp_path)
        await answered_without_traceback(server, NAMESRV)
        return
    server = start_broker(processes, broker_conf(tmp_path))

    async def still_serves(client: RemotingClient) -> None:
        assert (await call(client, server.addr, send_request("T2", b"after"))).code == 0

    async with RemotingClient.open() as client:  # a topic with a message to find things in
        assert (await call(client, server.addr, send_request("T1", b"before"))).code == 0
    await answered_without_traceback(server, BROKER, still_serves)
