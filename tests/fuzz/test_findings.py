"""What the fuzz campaigns found, each kept as a plain regression test against a real broker
(the shrunk case, written out by hand)."""

from __future__ import annotations

import json

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.fuzz.verdict import log_problems
from tests.integration.brokerkit import broker_conf, call, send_request, start_broker


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
