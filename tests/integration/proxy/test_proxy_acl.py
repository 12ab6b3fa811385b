"""ACL 1.0 on mqproxy's gRPC port (enableACL, RocketMQ 5.1's Proxy): the SDK's credentials
are checked against plain_acl.yml (signature, topic and group permissions); refusals end the
call with PERMISSION_DENIED."""

from __future__ import annotations

import binascii
import datetime
import hmac
from hashlib import sha1

import grpc
import pytest

from client.admin import AdminClient
from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from remoting.body import TopicConfig
from tests.harness import ProcessPool
from tests.integration.proxy.proxykit import (
    create_topic,
    in_thread,
    raw_message,
    run_sdk,
    start_proxy,
    stub,
)
from tests.kits.aclkit import ADMIN, USER, WRONG_SECRET, acl_home
from tests.kits.brokerkit import start_cluster


def signed(access_key: str, secret_key: str) -> tuple[tuple[str, str], ...]:
    """The metadata the 5.x SDKs send (MQv2-HMAC-SHA1 over x-mq-date-time)."""
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%SZ")
    mac = hmac.new(secret_key.encode(), stamp.encode(), sha1).digest()
    signature = binascii.hexlify(mac).decode()
    authorization = (
        f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, "
        f"Signature={signature}"
    )
    return (
        ("x-mq-client-id", "acl-test@1"),
        ("x-mq-date-time", stamp),
        ("authorization", authorization),
    )


@pytest.fixture(scope="module")
def acl_proxy(proxy_cluster, tmp_path_factory):
    ns, _, _ = proxy_cluster
    root = tmp_path_factory.mktemp("proxy-acl")
    pool = ProcessPool(root / "logs")
    try:
        home = acl_home(root)
        yield ns, start_proxy(pool, root, ns.addr, enableACL=True, rocketmqHome=str(home))
    finally:
        pool.stop_all()


@pytest.mark.slow  # two SDK runs; the permission checks below stay in the default suite
async def test_an_allowed_account_sends_and_a_wrong_secret_does_not(acl_proxy) -> None:
    ns, proxy = acl_proxy
    await create_topic(ns.addr, "Allowed")
    job = {
        "op": "send",
        "endpoints": f"127.0.0.1:{proxy.port}",
        "topic": "Allowed",
        "mode": "sync",
        "timeout": 5,
        "messages": [{"body": "with credentials"}],
    }
    ok = await run_sdk({**job, "ak": USER.access_key, "sk": USER.secret_key})
    assert ok[0]["ok"], ok
    wrong = await run_sdk({**job, "ak": WRONG_SECRET.access_key, "sk": WRONG_SECRET.secret_key})
    assert not wrong[0]["ok"]


async def test_permissions_per_topic_and_group(acl_proxy) -> None:
    ns, proxy = acl_proxy
    await create_topic(ns.addr, "ReadOnly")
    user = signed(USER.access_key, USER.secret_key)
    route = rpc.QueryRouteRequest(topic=pb.Resource(name="ReadOnly"))
    assert (await in_thread(stub(proxy).QueryRoute, route, metadata=user)).status.code == pb.Code.OK
    refusals = [
        (stub(proxy).SendMessage, rpc.SendMessageRequest(messages=[raw_message("ReadOnly")]), user),
        (stub(proxy).QueryRoute, route, user[:1]),  # no signature at all
        (stub(proxy).QueryRoute, route, signed("stranger1", "x")),
        (
            stub(proxy).QueryAssignment,
            rpc.QueryAssignmentRequest(
                topic=pb.Resource(name="ReadOnly"), group=pb.Resource(name="deniedGroup")
            ),
            user,
        ),
    ]
    for call, request, metadata in refusals:
        with pytest.raises(grpc.RpcError) as refused:
            await in_thread(call, request, metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, request


@pytest.mark.slow  # its own ACL broker
async def test_the_proxy_signs_for_acl_brokers_with_tools_yml(processes, tmp_path) -> None:
    home = acl_home(tmp_path)
    ns, _ = start_cluster(processes, tmp_path, aclEnable="true", rocketmqHome=home)
    async with AdminClient.open(ns.addr, ADMIN) as admin:
        config = TopicConfig(topic_name="Allowed", read_queue_nums=2, write_queue_nums=2)
        for addr in (await admin.masters("TestCluster")).values():
            await admin.create_topic(addr, config)
    job = {
        "op": "send",
        "topic": "Allowed",
        "mode": "sync",
        "timeout": 5,
        "messages": [{"body": "signed by the proxy"}],
    }
    unsigned = start_proxy(processes, tmp_path, ns.addr, name="unsigned", rocketmqHome=str(home))
    refused = await run_sdk({**job, "endpoints": f"127.0.0.1:{unsigned.port}"})
    assert not refused[0]["ok"]
    (home / "conf" / "tools.yml").write_text(
        f"accessKey: {USER.access_key}\nsecretKey: {USER.secret_key}\n"
    )
    signing = start_proxy(
        processes,
        tmp_path,
        ns.addr,
        name="signing",
        rocketmqHome=str(home),
        enableAclRpcHookForClusterMode=True,
    )
    sent = await run_sdk({**job, "endpoints": f"127.0.0.1:{signing.port}"})
    assert sent[0]["ok"], sent
