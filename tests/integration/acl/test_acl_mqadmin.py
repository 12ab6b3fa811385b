"""mqadmin against a broker with ACL on, run as an operator would: unsigned commands are
refused, every command signs with -a/-s (or the environment, or conf/tools.yml), and the ACL
commands change the broker's accounts and white list while it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import trio

from acl.credentials import SessionCredentials
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.kits.aclkit import ADMIN, USER, acl_file, acl_home, refused_by_acl, signed_call
from tests.kits.brokerkit import broker_conf, send_request, start_broker, start_namesrv

NEW_USER = ("newUser01", "newSecret1")


def mqadmin(ns, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "client.mqadmin", *args, "-n", ns.addr],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def as_admin(ns, *args: str) -> dict:
    done = mqadmin(
        ns, *args, "--json", "--access-key", ADMIN.access_key, "--secret-key", ADMIN.secret_key
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def cluster(processes, tmp_path):
    ns = start_namesrv(processes, tmp_path)
    home = acl_home(tmp_path)
    broker = start_broker(
        processes, broker_conf(tmp_path, namesrvAddr=ns.addr, aclEnable="true", rocketmqHome=home)
    )
    return ns, broker, home


async def test_unsigned_and_non_admin_commands_are_refused(cluster, tmp_path) -> None:
    ns, broker, _ = cluster
    refused = await trio.to_thread.run_sync(
        mqadmin, ns, "updateTopic", "-b", broker.addr, "-t", "X"
    )
    assert refused.returncode == 1 and "code 16" in refused.stderr
    assert "No accessKey is configured" in refused.stderr
    as_user = ("--access-key", USER.access_key, "--secret-key", USER.secret_key)
    refused = await trio.to_thread.run_sync(
        lambda: mqadmin(ns, "updateTopic", "-b", broker.addr, "-t", "X", *as_user)
    )
    assert refused.returncode == 1 and "Need admin permission for request code=17" in refused.stderr
    env = {"ROCKETMQ_ACCESS_KEY": ADMIN.access_key, "ROCKETMQ_SECRET_KEY": ADMIN.secret_key}
    done = await trio.to_thread.run_sync(
        lambda: mqadmin(ns, "updateTopic", "-b", broker.addr, "-t", "X", env=env)
    )
    assert done.returncode == 0, done.stderr
    tools_home = tmp_path / "tools-home"
    (tools_home / "conf").mkdir(parents=True)
    (tools_home / "conf" / "tools.yml").write_text(
        f"accessKey: {ADMIN.access_key}\nsecretKey: {ADMIN.secret_key}\n"
    )
    done = await trio.to_thread.run_sync(
        lambda: mqadmin(
            ns, "updateTopic", "-b", broker.addr, "-t", "Y", env={"ROCKETMQ_HOME": str(tools_home)}
        )
    )
    assert done.returncode == 0, done.stderr


async def test_acl_commands_manage_accounts_and_white_list(cluster) -> None:
    ns, broker, home = cluster

    def admin(*args: str):
        return trio.to_thread.run_sync(lambda: as_admin(ns, *args))

    newcomer = SessionCredentials(*NEW_USER)
    async with RemotingClient.open() as client:

        async def send(who) -> bool:
            response = await signed_call(client, broker.addr, send_request("Fresh", b"x"), who)
            assert response.code == ResponseCode.SUCCESS or refused_by_acl(response), (
                response.remark
            )
            return response.code == ResponseCode.SUCCESS

        assert not await send(newcomer)
        done = await admin(
            "updateAclConfig", "-c", "TestCluster", "-a", NEW_USER[0], "-s", NEW_USER[1],
            "-t", "Fresh=PUB", "-i", "DENY",
        )  # fmt: skip
        assert done["brokers"] == [broker.addr] and NEW_USER[1] not in json.dumps(done)
        assert await send(newcomer)  # in force at once
        assert f"accessKey: {NEW_USER[0]}" in acl_file(home).read_text()

        shown = (await admin("getAclConfig", "-b", broker.addr))[broker.addr]
        account = next(a for a in shown["accounts"] if a["accessKey"] == NEW_USER[0])
        assert account["topicPerms"] == ["Fresh=PUB"] and account["defaultTopicPerm"] == "DENY"
        assert NEW_USER[1] not in json.dumps(shown) and ADMIN.secret_key not in json.dumps(shown)
        versions = await admin("clusterAclConfigVersion", "-c", "TestCluster")
        assert versions["rows"][0][3].endswith("plain_acl.yml") and versions["rows"][0][4] == 1

        assert not await send(None)
        await admin("updateGlobalWhiteAddr", "-b", broker.addr, "-g", "127.0.0.1,10.1.1.*")
        assert await send(None)  # globally white-listed: no credentials needed
        await admin("updateGlobalWhiteAddr", "-b", broker.addr, "-g", "10.1.1.*")
        assert not await send(None)

        await admin("deleteAclConfig", "-b", broker.addr, "-a", NEW_USER[0])
        assert not await send(newcomer)
        again = await trio.to_thread.run_sync(
            lambda: mqadmin(ns, "deleteAclConfig", "-b", broker.addr, "-a", NEW_USER[0],
                            "--access-key", ADMIN.access_key, "--secret-key", ADMIN.secret_key)
        )  # fmt: skip
        assert again.returncode == 1 and "code 210" in again.stderr
        bad = await trio.to_thread.run_sync(
            lambda: mqadmin(ns, "updateAclConfig", "-b", broker.addr, "-a", "shorty", "-s", "x" * 8,
                            "--access-key", ADMIN.access_key, "--secret-key", ADMIN.secret_key)
        )  # fmt: skip
        assert bad.returncode == 1 and "code 209" in bad.stderr
