"""Bad settings against real processes (issue 22 item 5): ``mqbroker``/``mqnamesrv`` refuse to
start with one line on stderr and an exit code, never a traceback; UPDATE_BROKER_CONFIG and
UPDATE_NAMESRV_CONFIG refuse the same values with the same line, apply and persist nothing, and
a restart proves it."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from remoting import properties
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.harness import free_port_block, python_module
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker, start_namesrv
from tests.kits.clikit import echoed
from tests.kits.mountkit import fill, tmpfs

# (key, value, what the refusal says): one per class of bad value
BROKER_REFUSALS = [
    ("maxMessageSize", "99999999999999999999", "between 1 and 2147483647"),
    ("maxIndexNum", "2000000000", "an index file would be"),
    ("maxMessageSize", "16777216", "cannot fit in a CommitLog file"),
    ("mappedFileSizeConsumeQueue", "1001", "multiple of 20"),
    ("listenPort", "ten", "expected an integer"),
    ("flushDiskType", "SOMETIMES", "expected one of"),
    ("diskSpaceWarningLevelRatio", "Infinity", "finite"),
    ("messageDelayLevel", "1x", "'1x'"),
    ("brokerName", "../../tmp/evil", "not . or .."),
    ("brokerIP1", "my-host", "IPv4 or IPv6 address"),
    ("namesrvAddr", "127.0.0.1", "host:port"),
]


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def assert_one_line(done: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def start_with(tmp_path: Path, **overrides: object) -> subprocess.CompletedProcess:
    return run(python_module("broker", "-c", str(broker_conf(tmp_path, **overrides))))


@pytest.mark.parametrize(("key", "value", "reason"), BROKER_REFUSALS)
def test_mqbroker_refuses_a_bad_value_in_one_line(tmp_path, key, value, reason) -> None:
    line = assert_one_line(start_with(tmp_path, **{key: value}), 2, f"{key}={value!r}", reason)
    assert line.startswith("mqbroker: bad value for ")
    assert not (tmp_path / "store-broker-a-0").exists()  # refused before touching the store


def test_mqbroker_refuses_a_store_path_with_a_file_in_the_way(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    done = start_with(tmp_path, storePathRootDir=tmp_path / "file" / "store")
    assert_one_line(done, 2, "storePathRootDir=", "is not a directory")


def test_mqbroker_refuses_a_read_only_store(tmp_path) -> None:
    with tmpfs(tmp_path / "ro", read_only=True) as ro:
        done = start_with(tmp_path, storePathRootDir=ro / "store")
    assert_one_line(done, 2, echoed("storePathRootDir", ro / "store"), "read-only")


async def test_mqbroker_and_mqnamesrv_start_on_a_full_disk_and_refuse_writes(
    processes, tmp_path
) -> None:
    # A full disk is not a configuration error: a broker restarted on it must serve what it
    # holds (the store's disk-full tests cover a store with data), and writes are refused.
    with tmpfs(tmp_path / "full", size_kib=64) as full:
        fill(full)
        broker = start_broker(processes, broker_conf(tmp_path, storePathRootDir=full / "store"))
        conf = tmp_path / "namesrv.conf"
        conf.write_text(
            f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={full / 'ns' / 'kvConfig.json'}\n"
        )
        namesrv = processes.start("namesrv", python_module("namesrv", "-c", str(conf)))
        async with RemotingClient.open() as client:
            refused = await call(client, broker.addr, send_request("Full", b"x"))
            assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE, refused.remark
            put = RemotingCommand.request(
                RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}
            )
            assert (await call(client, namesrv.addr, put)).code != ResponseCode.SUCCESS
        for server in (broker, namesrv):
            server.terminate()
            assert "the disk is full: starting" in server.log_path.read_text()


def test_a_port_in_use_or_a_locked_store_ends_start_up_in_one_line(processes, tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port_block()))  # below the ephemeral range: no warning
        taken.listen()
        port = taken.getsockname()[1]
        conf = tmp_path / "namesrv.conf"
        conf.write_text(f"listenPort={port}\nlistenHost=127.0.0.1\n")
        done = run(python_module("namesrv", "-c", str(conf)))
        assert_one_line(done, 3, "mqnamesrv: cannot start:", "in use")
    conf = broker_conf(tmp_path)
    start_broker(processes, conf)
    second = broker_conf(tmp_path, name="broker-a", storePathRootDir=tmp_path / "store-broker-a-0")
    assert_one_line(run(python_module("broker", "-c", str(second))), 3, "mqbroker: cannot start:")


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [("listenPort", "70000", "between 0 and 65535"), ("orderMessageEnable", "yes", "true or")],
)
def test_mqnamesrv_refuses_a_bad_value_in_one_line(tmp_path, key, value, reason) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"{key}={value}\n")
    assert_one_line(run(python_module("namesrv", "-c", str(conf))), 2, f"{key}={value!r}", reason)


def _update(code: int, changes: dict[str, str]) -> RemotingCommand:
    return RemotingCommand.request(code, {}, properties.dumps(changes).encode())


async def _config(client: RemotingClient, addr: str, code: int) -> dict[str, str]:
    shown = await call(client, addr, RemotingCommand.request(code, {}))
    return properties.loads(bytes(shown.body).decode())


async def test_update_broker_config_refuses_each_bad_value_and_keeps_nothing(
    processes, tmp_path
) -> None:
    conf = broker_conf(tmp_path)
    (tmp_path / "file").write_text("x")
    refusals = [
        *BROKER_REFUSALS,
        ("storePathRootDir", str(tmp_path / "file" / "store"), "is not a directory"),
        ("logFile", str(tmp_path), "is a directory"),
    ]
    broker = start_broker(processes, conf)
    before = conf.read_text()
    async with RemotingClient.open() as client:
        shown_before = await _config(client, broker.addr, RequestCode.GET_BROKER_CONFIG)
        for key, value, reason in refusals:
            refused = await call(
                client, broker.addr, _update(RequestCode.UPDATE_BROKER_CONFIG, {key: value})
            )
            assert refused.code == ResponseCode.SYSTEM_ERROR, (key, refused.remark)
            expected = f"bad value for {echoed(key, value)}: "
            assert refused.remark.startswith(expected), refused.remark
            assert reason in refused.remark
        # a good key with a bad one: all or nothing
        mixed = {"fileReservedTime": "24", "maxMessageSize": "99999999999999999999"}
        refused = await call(client, broker.addr, _update(RequestCode.UPDATE_BROKER_CONFIG, mixed))
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert await _config(client, broker.addr, RequestCode.GET_BROKER_CONFIG) == shown_before
        assert (await call(client, broker.addr, send_request("Still", b"ok"))).code == 0
    assert conf.read_text() == before
    assert broker.terminate() == 0
    broker = start_broker(processes, conf)  # nothing bad was persisted: it starts, it stores
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Still", b"again"))).code == 0


async def test_update_namesrv_config_validates_applies_and_persists(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = tmp_path / "namesrv.conf"
    started_from = conf.read_text()
    async with RemotingClient.open() as client:
        for changes, code, remark in [
            (
                {"listenPort": "70000"},
                ResponseCode.SYSTEM_ERROR,
                "bad value for listenPort='70000'",
            ),
            ({"orderMessageEnable": "yes"}, ResponseCode.SYSTEM_ERROR, "true or false"),
            ({"scanNotActiveBrokerInterval": "0"}, ResponseCode.SYSTEM_ERROR, "between 1 and"),
            ({"kvConfigPath": "/tmp/x.json"}, ResponseCode.NO_PERMISSION, "black list"),
            ({"rocketmqHome": "/"}, ResponseCode.NO_PERMISSION, "black list"),
            ({"lisenPort": "1"}, ResponseCode.SYSTEM_ERROR, "unknown namesrv config key"),
        ]:
            refused = await call(
                client, ns.addr, _update(RequestCode.UPDATE_NAMESRV_CONFIG, changes)
            )
            assert (refused.code, remark in (refused.remark or "")) == (code, True), refused.remark
        good = {"orderMessageEnable": "true", "scanNotActiveBrokerInterval": "5000"}
        done = await call(client, ns.addr, _update(RequestCode.UPDATE_NAMESRV_CONFIG, good))
        assert (done.code, done.remark) == (
            0,
            "applied: orderMessageEnable, scanNotActiveBrokerInterval",
        )
        shown = await _config(client, ns.addr, RequestCode.GET_NAMESRV_CONFIG)
        assert (shown["orderMessageEnable"], shown["scanNotActiveBrokerInterval"]) == (
            "true",
            "5000",
        )
    # kept beside kvConfigPath, the -c file untouched
    written = properties.load(tmp_path / "namesrv-kv" / "namesrv.properties")
    assert written == {"orderMessageEnable": "true", "scanNotActiveBrokerInterval": "5000"}
    assert conf.read_text() == started_from
    assert ns.terminate() == 0
    ns = processes.start("namesrv-again", python_module("namesrv", "-c", str(conf)))
    async with RemotingClient.open() as client:
        shown = await _config(client, ns.addr, RequestCode.GET_NAMESRV_CONFIG)
    assert (shown["orderMessageEnable"], shown["scanNotActiveBrokerInterval"]) == ("true", "5000")
