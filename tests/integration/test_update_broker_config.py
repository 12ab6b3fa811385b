"""``mqadmin updateBrokerConfig`` against a real broker started with ``-c``: a change takes
effect at once where the broker reads it as it works, reaches the NameServer when it is the
broker's permission, is kept in ``brokerConfigPath`` (never in the -c file, which may be
read-only) and read over the -c file at the next start; a bad key or value is refused by name."""

from __future__ import annotations

import hashlib
from pathlib import Path

import trio

from remoting import properties
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.client.test_mqadmin import as_json, mqadmin
from tests.integration.brokerkit import (
    broker_conf,
    call,
    send_request,
    start_broker,
    start_namesrv,
    wait_for_route,
)
from tests.mountkit import read_only


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runtime_file(tmp_path: Path) -> Path:
    """Where broker_conf's broker keeps its runtime changes: Java's spot under the store."""
    return tmp_path / "store-broker-a-0" / "config" / "broker.properties"


async def shown_config(client: RemotingClient, addr: str) -> dict[str, str]:
    shown = await call(client, addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, {}))
    return properties.loads(bytes(shown.body).decode())


async def test_a_broker_made_read_only_at_run_time_refuses_sends_and_says_so(
    processes, tmp_path
) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr)
    started_from = digest(conf)
    broker = start_broker(processes, conf)

    def admin(*args: str):
        return trio.to_thread.run_sync(lambda: as_json(ns, *args, "-b", broker.addr))

    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Perm", b"x"))).code == 0
        await wait_for_route(client, ns.addr, "Perm", bool)

        done = await admin("updateBrokerConfig", "-k", "brokerPermission", "-v", "4")
        assert done["brokers"][broker.addr] == "applied: brokerPermission"
        refused = await call(client, broker.addr, send_request("Perm", b"y"))
        assert refused.code == ResponseCode.NO_PERMISSION
        # re-registered at once: the NameServer routes the topic read-only
        await wait_for_route(client, ns.addr, "Perm", lambda r: r and r.queue_datas[0].perm == 4)
        assert properties.load(runtime_file(tmp_path)) == {"brokerPermission": "4"}
        shown = await admin("getBrokerConfig")
        assert "brokerPermission=4" in shown[broker.addr].splitlines()

        done = await admin("updateBrokerConfig", "-k", "listenPort", "-v", "1234")
        assert done["brokers"][broker.addr] == "stored, applied at the next start: listenPort"
        # back to the start-up file's value: the key leaves the runtime file
        await admin("updateBrokerConfig", "-k", "brokerPermission", "-v", "6")
        assert (await call(client, broker.addr, send_request("Perm", b"z"))).code == 0
        assert properties.load(runtime_file(tmp_path)) == {"listenPort": "1234"}
    assert digest(conf) == started_from


async def test_changes_survive_a_restart_and_the_read_only_start_up_file_is_never_written(
    processes, tmp_path
) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    conf = etc / "broker-a.conf"
    conf.write_text(broker_conf(tmp_path, fileReservedTime=72).read_text())
    started_from = digest(conf)
    with read_only(etc):
        broker = start_broker(processes, conf)
        changes = {"fileReservedTime": "24", "brokerPermission": "4", "maxMessageSize": "65536"}
        async with RemotingClient.open() as client:
            for key, value in changes.items():
                update = RemotingCommand.request(
                    RequestCode.UPDATE_BROKER_CONFIG, {}, f"{key}={value}\n".encode()
                )
                done = await call(client, broker.addr, update)
                assert (done.code, done.remark) == (0, f"applied: {key}")
        assert broker.terminate() == 0
        assert properties.load(runtime_file(tmp_path)) == changes
        assert runtime_file(tmp_path).stat().st_mode & 0o777 == 0o600  # may hold a secretKey

        broker = start_broker(processes, conf, "broker-again")
        async with RemotingClient.open() as client:
            running = await shown_config(client, broker.addr)
            assert {key: running[key] for key in changes} == changes
            refused = await call(client, broker.addr, send_request("Perm", b"x"))
            assert refused.code == ResponseCode.NO_PERMISSION  # read-only again, from the file
        log = broker.log_path.read_text()
        assert f"runtime changes read from {runtime_file(tmp_path)}" in log
        assert "fileReservedTime='24' (start-up: '72')" in log
    assert digest(conf) == started_from


def test_a_bad_value_an_unknown_key_or_a_black_listed_one_is_refused_by_name(
    processes, tmp_path
) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr)
    broker = start_broker(processes, conf)
    before = conf.read_text()
    bad = mqadmin(
        ns, "updateBrokerConfig", "-b", broker.addr, "-k", "brokerPermission", "-v", "9", ok=False
    )
    assert "brokerPermission='9'" in bad.stderr
    unknown = mqadmin(
        ns, "updateBrokerConfig", "-b", broker.addr, "-k", "brokerPermision", "-v", "4", ok=False
    )
    assert "unknown broker config key(s): brokerPermision" in unknown.stderr
    for key in ("brokerConfigPath", "rocketmqHome", "configBlackList"):
        black = mqadmin(
            ns, "updateBrokerConfig", "-b", broker.addr, "-k", key, "-v", "/x", ok=False
        )
        assert f"Can not update config in black list: {key}" in black.stderr
    assert conf.read_text() == before  # nothing written for a refused change
    assert not runtime_file(tmp_path).exists()
