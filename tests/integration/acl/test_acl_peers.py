"""A broker's own requests under ACL: its registrations with a NameServer that checks them,
and a slave's config sync from a master that checks it, both signed with the accessKey and
secretKey of broker.conf; without them the peer refuses and says so."""

from __future__ import annotations

from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.kits.aclkit import ADMIN, USER, acl_home, signed_call
from tests.kits.brokerkit import (
    broker_conf,
    route_request,
    send_request,
    start_broker,
    start_namesrv,
)
from tests.kits.hakit import start_pair, wait_until


async def test_a_namesrv_with_acl_takes_only_signed_admin_registrations(
    processes, tmp_path
) -> None:
    home = acl_home(tmp_path)
    ns = start_namesrv(processes, tmp_path, aclEnable="true", rocketmqHome=home)
    keys = {"accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key}
    signed = start_broker(
        processes, broker_conf(tmp_path, "broker-a", namesrvAddr=ns.addr, **keys), "a"
    )
    as_user = {"accessKey": USER.access_key, "secretKey": USER.secret_key}
    user = start_broker(
        processes, broker_conf(tmp_path, "broker-b", namesrvAddr=ns.addr, **as_user), "b"
    )
    unsigned = start_broker(processes, broker_conf(tmp_path, "broker-c", namesrvAddr=ns.addr), "c")
    async with RemotingClient.open() as client:
        for broker in (signed, user, unsigned):  # each creates its topic, then registers
            assert (
                await client.invoke(broker.addr, send_request(f"T-{broker.name}", b"x"), 10)
            ).code == 0

        async def routed() -> bool:
            return (await client.invoke(ns.addr, route_request("T-a"), 10)).code == 0

        await wait_until(routed, timeout_s=30, what="the signed broker's route")
        info = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {})
        cluster = (await client.invoke(ns.addr, info, 10)).body
        assert b"broker-a" in cluster and b"broker-b" not in cluster and b"broker-c" not in cluster
    for broker, reason in ((user, "Need admin permission"), (unsigned, "No accessKey")):
        log = broker.log_tail(200)
        assert "refused the registration: 16" in log and reason in log, log


async def test_a_slave_signs_its_config_sync_with_its_master(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    keys = {"accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key}
    runs = {}
    for name, extra in (("signed", keys), ("unsigned", {"brokerName": "broker-u"})):
        where = tmp_path / name
        where.mkdir()
        runs[name] = start_pair(
            processes, where, ns.addr, aclEnable="true", rocketmqHome=acl_home(where), **extra
        )
    signed = runs["signed"]
    async with RemotingClient.open() as client:
        create = RemotingCommand.request(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {"topic": "Synced", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
             "topicFilterType": "SINGLE_TAG"},
        )  # fmt: skip
        assert (await signed_call(client, signed.master.addr, create, ADMIN)).code == 0

        async def synced() -> bool:
            listing = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})
            response = await signed_call(client, signed.slave.addr, listing, ADMIN)
            return b'"Synced"' in response.body

        await wait_until(synced, timeout_s=30, what="the slave to copy the master's topics")

    async def refused() -> bool:
        log = runs["unsigned"].slave.log_tail(200)
        return "config sync from master" in log and "answered 16" in log

    await wait_until(refused, timeout_s=30, what="the unsigned slave's sync to be refused")
