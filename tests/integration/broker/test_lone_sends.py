"""Lone sync sends (one request in flight on a connection: the broker's lone path, which its
lone-send front answers in C, broker/processor/send_plain.py ``lone_front``) against real
brokers, each answered exactly as a broker without the front answers it: one broker of each
kind (the second with ROCKETMQ_TRIO_PURE_STORE=1, where the front is not built), the same
sequence of sends to both, the replies compared field by field (the message ids name the
broker's own address). With ACL on and off, the broker made read-only and writable again at
run time (UPDATE_BROKER_CONFIG brokerPermission), a topic not in the table, a DELAY property,
a queue id the topic lacks."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from remoting import properties
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.harness import python_module
from tests.kits.aclkit import ADMIN, USER, WRONG_SECRET, acl_home, signed_call
from tests.kits.brokerkit import broker_conf, send_request, start_namesrv

# The reply fields that name the broker (its address is in every message id).
_OWN = frozenset({"msgId", "offsetMsgId"})


def start_pair(processes: Any, tmp_path: Path, **overrides: object) -> tuple[str, str]:
    """A broker with the front (as the environment builds it) and one without: addresses."""
    ns = start_namesrv(processes, tmp_path)
    addrs = []
    for name, pure_store in (("front", None), ("chain", "1")):
        conf = broker_conf(tmp_path, name=name, namesrvAddr=ns.addr, **overrides)
        env = dict(os.environ)
        if pure_store:
            env["ROCKETMQ_TRIO_PURE_STORE"] = pure_store
        argv = python_module("broker", "-c", str(conf))
        addrs.append(processes.start(name, argv, env=env).addr)
    return addrs[0], addrs[1]


def seen(response: RemotingCommand) -> tuple[Any, ...]:
    """A reply without what names the broker or the client's port (a refusal's remark names
    the producer's address)."""
    fields = {k: v for k, v in (response.ext_fields or {}).items() if k not in _OWN}
    remark = re.sub(r"127\.0\.0\.1:\d+", "ADDR", response.remark or "")
    return response.code, remark, fields, bytes(response.body or b"")


def send(topic: str, n: int, queue_id: int = 0, **props: str) -> RemotingCommand:
    request = send_request(topic, b"lone %d" % n, queue_id=queue_id, properties=props)
    # the same UNIQ_KEY on both brokers (send_request draws one per request)
    request.ext_fields["i"] = request.ext_fields["i"].replace(
        request.ext_fields["i"].split("UNIQ_KEY\x01")[1].split("\x02")[0], f"{n:032X}"
    )
    return request


async def both(client: RemotingClient, addrs: tuple[str, str], make: Any, who: Any = None) -> Any:
    """The same request to each broker, one at a time (a lone request each): the replies seen
    equal, and returned."""
    got = [seen(await signed_call(client, addr, make(), who)) for addr in addrs]
    assert got[0] == got[1]
    return got[0]


def update(key: str, value: str) -> Any:
    body = properties.dumps({key: value}).encode()
    return lambda: RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, body)


async def test_lone_sends_are_answered_as_without_the_front(processes, tmp_path) -> None:
    addrs = start_pair(processes, tmp_path)
    async with RemotingClient.open() as client:
        code, *_ = await both(client, addrs, lambda: send("Lone", 0))  # made by auto-creation
        assert code == 0
        for n in range(1, 6):
            code, _, fields, _ = await both(client, addrs, lambda n=n: send("Lone", n, n % 4))
            assert code == 0 and fields["queueId"] == str(n % 4)
        assert (await both(client, addrs, lambda: send("Lone", 9, 9)))[0] != 0  # no queue 9
        delayed = await both(client, addrs, lambda: send("Lone", 10, DELAY="2"))
        assert delayed[0] == 0
        assert (await both(client, addrs, lambda: send("NotThere", 11)))[0] == 0
        assert (await both(client, addrs, update("brokerPermission", "4")))[0] == 0
        refused = await both(client, addrs, lambda: send("Lone", 12))
        assert refused[0] != 0 and "forbidden" in refused[1]
        assert (await both(client, addrs, update("brokerPermission", "6")))[0] == 0
        assert (await both(client, addrs, lambda: send("Lone", 13, 1)))[0] == 0
        # V1 headers too
        v1 = lambda: RemotingCommand.request(  # noqa: E731
            RequestCode.SEND_MESSAGE, *_v1_of(send("Lone", 14, 2))
        )
        assert (await both(client, addrs, v1))[0] == 0


def _v1_of(request: RemotingCommand) -> tuple[dict[str, str], bytes]:
    names = dict(a="producerGroup", b="topic", c="defaultTopic", d="defaultTopicQueueNums",
                 e="queueId", f="sysFlag", g="bornTimestamp", h="flag", i="properties",
                 j="reconsumeTimes", k="unitMode", l="maxReconsumeTimes", m="batch")  # fmt: skip
    fields = {names[k]: v for k, v in request.ext_fields.items() if k in names}
    return fields, request.body


async def test_lone_sends_with_acl_on_are_checked_as_without_the_front(processes, tmp_path) -> None:
    home = acl_home(tmp_path)
    addrs = start_pair(processes, tmp_path, aclEnable="true", rocketmqHome=home)
    async with RemotingClient.open() as client:
        for n in range(4):  # the topic made by its first send, then lone plain sends
            assert (await both(client, addrs, lambda n=n: send("Allowed", n), USER))[0] == 0
        for who in (WRONG_SECRET, None):
            refused = await both(client, addrs, lambda: send("Allowed", 5), who)
            assert refused[0] != 0
        denied = await both(client, addrs, lambda: send("Other", 6), USER)
        assert denied[0] != 0
        assert (await both(client, addrs, lambda: send("Allowed", 7), USER))[0] == 0
        assert (await both(client, addrs, update("brokerPermission", "4"), ADMIN))[0] == 0
        assert (await both(client, addrs, lambda: send("Allowed", 8), USER))[0] != 0
