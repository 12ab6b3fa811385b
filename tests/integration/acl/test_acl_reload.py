"""plain_acl.yml changed while clients are connected: the new rules apply within seconds with
no restart and no dropped connection; a bad file is refused (the broker logs its line) and the
rules in force stay."""

from __future__ import annotations

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.kits.aclkit import PLAIN_ACL, USER, acl_file, acl_home, refused_by_acl
from tests.kits.brokerkit import broker_conf, send_request, start_broker
from tests.kits.hakit import wait_until


async def test_rules_change_under_running_clients(processes, tmp_path) -> None:
    home = acl_home(tmp_path)
    broker = start_broker(
        processes, broker_conf(tmp_path, aclEnable="true", rocketmqHome=home, namesrvAddr="")
    )
    async with RemotingClient.open(before_request=USER.sign) as client:

        async def send_ok() -> bool:
            response = await client.invoke(broker.addr, send_request("Later", b"x"), 10)
            assert response.code == ResponseCode.SUCCESS or refused_by_acl(response)
            return response.code == ResponseCode.SUCCESS

        assert not await send_ok()  # USER's default topic permission is DENY
        connection = await client.connection(broker.addr)

        granted = PLAIN_ACL.replace(
            "      - ReadOnly=SUB\n", "      - ReadOnly=SUB\n      - Later=PUB\n"
        )
        acl_file(home).write_text(granted)
        await wait_until(send_ok, timeout_s=10, what="the grant to apply")

        # a broken file: refused with its line, the grant stays in force
        acl_file(home).write_text(granted + "      - Broken\n")

        async def logged() -> bool:
            return (
                "plain_acl.yml:16: groupPerms: 'Broken' is not name=PERM"
                in broker.log_path.read_text()
            )

        await wait_until(logged, timeout_s=10, what="the refusal in the broker's log")
        assert await send_ok()

        acl_file(home).write_text(PLAIN_ACL)  # revoked again

        async def refused() -> bool:
            return not await send_ok()

        await wait_until(refused, timeout_s=10, what="the revocation to apply")
        assert await client.connection(broker.addr) is connection and not connection.closed
