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

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from tests.harness import ProcessPool
from tests.integration.proxy.proxykit import (
    create_topic,
    in_thread,
    raw_message,
    run_sdk,
    start_proxy,
    stub,
)
from tests.kits.aclkit import USER, WRONG_SECRET, acl_home


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
