"""The official C++ client (rocketmq==0.4.4, ``set_session_credentials``) against a broker with
``aclEnable=true``: its signatures (which cover its OnsChannel field) verify, a valid account
produces and consumes exactly once; a wrong secret, an unknown key or a topic it may not
publish to fails every send with NO_PERMISSION and stores nothing; a DENY group receives
nothing. (The C++ client sends no admin requests; tests/integration/acl/test_acl_broker.py and
test_acl_mqadmin.py refuse those to non-admin accounts of our client and mqadmin.)"""

from __future__ import annotations

import pytest
import trio

from client.admin import AdminClient
from remoting.body import TopicConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.interop.cppkit import acked_keys, received, run_driver
from tests.kits.aclkit import ADMIN, STRANGER, USER, WRONG_SECRET, acl_home, signed_call
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv, wait_for_route

pytestmark = pytest.mark.interop


@pytest.fixture
def cluster(processes, tmp_path):
    ns = start_namesrv(processes, tmp_path)
    home = acl_home(tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr, aclEnable="true", rocketmqHome=home)
    broker = start_broker(processes, conf)

    async def create() -> None:
        async with AdminClient.open(ns.addr, ADMIN) as admin:
            for topic in ("Allowed", "ReadOnly"):
                config = TopicConfig(topic_name=topic, read_queue_nums=2, write_queue_nums=2)
                await admin.create_topic_in_cluster("TestCluster", config)
        async with RemotingClient.open() as client:
            for topic in ("Allowed", "ReadOnly"):
                await wait_for_route(client, ns.addr, topic, bool)

    trio.run(create)
    return ns, broker


def stored(broker_addr: str, topic: str) -> int:
    async def total() -> int:
        count = 0
        async with RemotingClient.open() as client:
            for queue_id in range(2):
                fields = {"topic": topic, "queueId": str(queue_id)}
                request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, fields)
                response = await signed_call(client, broker_addr, request, ADMIN)
                count += int(response.ext("offset") or 0)
        return count

    return trio.run(total)


def as_(who) -> list[str]:
    return ["--access-key", who.access_key, "--secret-key", who.secret_key]


def test_a_valid_account_produces_and_consumes_exactly_once(cluster) -> None:
    ns, _ = cluster
    events = run_driver(
        "produce", "--ns", ns.addr, "--topic", "Allowed", "--count", "50", *as_(USER)
    )
    assert events[-1] == {"done": True, "failures": 0}
    keys = acked_keys(events)
    assert len(keys) == 50
    consumed = run_driver(
        "consume", "--ns", ns.addr, "--topic", "Allowed", "--group", "allowedGroup",
        "--expect", "50", "--linger", "2", *as_(USER),
    )  # fmt: skip
    counts = received(consumed)
    assert set(counts) == set(keys) and max(counts.values()) == 1


@pytest.mark.parametrize(
    ("who", "topic", "reason"),
    [
        (WRONG_SECRET, "Allowed", "Check signature failed for accessKey=aclUser01"),
        (STRANGER, "Allowed", "No acl config for stranger1"),
        (USER, "ReadOnly", "No default permission for topic:ReadOnly"),
    ],
    ids=["wrong-secret", "unknown-key", "no-pub"],
)
def test_refused_sends_fail_and_store_nothing(cluster, who, topic, reason) -> None:
    ns, broker = cluster
    events = run_driver(
        "produce", "--ns", ns.addr, "--topic", topic, "--count", "3", "--send-timeout-ms", "2000",
        *as_(who),
    )  # fmt: skip
    assert events[-1] == {"done": True, "failures": 3}, events
    # The client retries, then reports its own "No route info" message; the broker says why.
    assert "ACL refused: peer=127.0.0.1:" in broker.log_tail(400)
    assert f"reason={reason}" in broker.log_tail(400)
    assert stored(broker.addr, topic) == 0


def test_a_deny_group_receives_nothing(cluster) -> None:
    ns, broker = cluster
    events = run_driver(
        "produce", "--ns", ns.addr, "--topic", "Allowed", "--count", "5", *as_(USER)
    )
    assert events[-1] == {"done": True, "failures": 0}
    consumed = run_driver(
        "consume", "--ns", ns.addr, "--topic", "Allowed", "--group", "deniedGroup",
        "--expect", "1", "--timeout", "8", *as_(USER),
    )  # fmt: skip
    assert not received(consumed) and consumed[-1] == {"done": False, "distinct": 0}
    assert stored(broker.addr, "Allowed") == 5
