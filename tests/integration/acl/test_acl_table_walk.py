"""The whole request-code table (acl/table.py) walked against a running broker with ACL on:
every code the broker serves is refused without credentials, admin-only codes are refused to a
non-admin account, a code that names resources is refused when they are the account's DENY
ones and let through when they are its own, and every other code lets a signed account
through. A code added to the broker without a table entry fails tests/unit/acl/test_table.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acl.table import RULES, Access
from broker.config import load_broker_config
from broker.controller import BrokerController
from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode as R
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from tests.kits.aclkit import ADMIN, USER, acl_home, refused_by_acl, signed_call
from tests.kits.brokerkit import broker_conf, send_request, start_broker


def served_codes(tmp_path: Path) -> list[int]:
    """What a broker registers (a controller built, never started)."""
    config, store = load_broker_config(
        {"storePathRootDir": str(tmp_path / "unused"), "brokerIP1": "127.0.0.1"}
    )
    return sorted(BrokerController(config, store).server.processors)


def crafted(code: int, topic: str, group: str, phys_offset: int) -> RemotingCommand:
    """A request naming ``topic`` and ``group`` wherever any code's ACL looks for them."""
    fields = {
        "topic": topic,
        "b": topic,
        "a": "PG",
        "group": group,
        "consumerGroup": group,
        "offset": str(phys_offset),
        "queueId": "0",
        "clientID": "table-walker",
    }
    body = b""
    if code == R.HEART_BEAT:
        consumer = {"groupName": group, "subscriptionDataSet": [{"topic": topic}]}
        body = json.dumps({"clientID": "table-walker", "consumerDataSet": [consumer]}).encode()
    elif code in (R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ):
        body = json.dumps({"consumerGroup": group, "clientId": "table-walker", "mqSet": []})
        body = body.encode()
    return RemotingCommand.request(code, fields, body)


async def stored_at(client: RemotingClient, addr: str, topic: str) -> int:
    response = await signed_call(client, addr, send_request(topic, b"walk"), ADMIN)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return codec.decode_offset_msg_id(response.ext("msgId") or "").phys_offset


@pytest.mark.timeout(300)
async def test_every_served_code_is_refused_or_let_through_as_the_table_says(
    processes, tmp_path
) -> None:
    codes = served_codes(tmp_path)
    assert len(codes) > 40
    home = acl_home(tmp_path)
    broker = start_broker(
        processes, broker_conf(tmp_path, aclEnable="true", rocketmqHome=home, namesrvAddr="")
    )
    refusals: dict[str, list[int]] = {"unsigned": [], "user": []}
    async with RemotingClient.open() as client:
        denied_at = await stored_at(client, broker.addr, "Secret")
        allowed_at = await stored_at(client, broker.addr, "Allowed")
        for code in codes:
            rule = RULES[code]
            unsigned = await signed_call(
                client, broker.addr, crafted(code, "Allowed", "allowedGroup", allowed_at), None
            )
            assert refused_by_acl(unsigned), (code, unsigned.code, unsigned.remark)
            refusals["unsigned"].append(code)

            mine = crafted(code, "Allowed", "allowedGroup", allowed_at)
            theirs = crafted(code, "Secret", "deniedGroup", denied_at)
            on_mine = await signed_call(client, broker.addr, mine, USER)
            on_theirs = await signed_call(client, broker.addr, theirs, USER)
            if rule.access is Access.ADMIN:
                assert refused_by_acl(on_mine) and "Need admin permission" in on_mine.remark, code
                refusals["user"].append(code)
            elif rule.access is Access.RESOURCES:
                assert not refused_by_acl(on_mine), (code, on_mine.remark)
                assert refused_by_acl(on_theirs), (code, on_theirs.code, on_theirs.remark)
                assert "No default permission for" in on_theirs.remark
                refusals["user"].append(code)
            else:
                assert rule.access is Access.SIGNED, code
                assert not refused_by_acl(on_mine), (code, on_mine.remark)
                assert not refused_by_acl(on_theirs), (code, on_theirs.remark)
    assert len(refusals["unsigned"]) == len(codes)
    # Java's five admin codes and the message reads are among the user's refusals
    assert {R.UPDATE_AND_CREATE_TOPIC, R.DELETE_TOPIC_IN_BROKER, R.PULL_MESSAGE,
            R.VIEW_MESSAGE_BY_ID, R.QUERY_MESSAGE} <= set(refusals["user"])  # fmt: skip
