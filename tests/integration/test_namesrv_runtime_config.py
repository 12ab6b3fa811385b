"""``updateNamesrvConfig`` on a real NameServer whose start-up file cannot be written (a
read-only bind mount, as /etc is to the service user): the change is kept in
``configStorePath``, a restart reads it over the start-up file, and the start-up file's bytes
never change. A ``configStorePath`` naming the start-up file itself is refused at start."""

from __future__ import annotations

import hashlib
import subprocess

from remoting import properties
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.harness import python_module
from tests.integration.brokerkit import call
from tests.mountkit import read_only


async def _shown(client: RemotingClient, addr: str) -> dict[str, str]:
    shown = await call(client, addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG, {}))
    return properties.loads(bytes(shown.body).decode())


async def test_a_change_survives_a_restart_without_writing_the_start_up_file(
    processes, tmp_path
) -> None:
    etc, data = tmp_path / "etc", tmp_path / "var"
    etc.mkdir()
    conf = etc / "namesrv.conf"
    runtime_file = data / "runtime" / "namesrv.properties"
    conf.write_text(
        "listenPort=0\nlistenHost=127.0.0.1\norderMessageEnable=false\n"
        f"kvConfigPath={data / 'kv' / 'kvConfig.json'}\nconfigStorePath={runtime_file}\n"
    )
    started_from = hashlib.sha256(conf.read_bytes()).hexdigest()
    change = properties.dumps({"orderMessageEnable": "true"}).encode()
    with read_only(etc):
        ns = processes.start("namesrv", python_module("namesrv", "-c", str(conf)))
        async with RemotingClient.open() as client:
            update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, change)
            done = await call(client, ns.addr, update)
            assert (done.code, done.remark) == (0, "applied: orderMessageEnable")
            assert (await _shown(client, ns.addr))["configStorePath"] == str(runtime_file)
        assert ns.terminate() == 0
        assert properties.load(runtime_file) == {"orderMessageEnable": "true"}

        ns = processes.start("namesrv-again", python_module("namesrv", "-c", str(conf)))
        async with RemotingClient.open() as client:
            assert (await _shown(client, ns.addr))["orderMessageEnable"] == "true"
        assert "orderMessageEnable='true' (start-up: 'false')" in ns.log_path.read_text()
    assert hashlib.sha256(conf.read_bytes()).hexdigest() == started_from


def test_the_start_up_file_cannot_be_the_runtime_file(tmp_path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"listenPort=0\nkvConfigPath={tmp_path / 'kvConfig.json'}\n")
    conf.write_text(conf.read_text() + f"configStorePath={conf}\n")
    done = subprocess.run(
        python_module("namesrv", "-c", str(conf)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"mqnamesrv: bad value for configStorePath='{conf}': that is the -c file, which the name "
        "server never rewrites; name another file (or leave it out: namesrv.properties beside "
        "kvConfigPath)"
    ]
