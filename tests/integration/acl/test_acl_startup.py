"""Starting with ACL: a missing or bad plain_acl.yml stops mqbroker and mqnamesrv naming the
file, line and reason; without ACL on a non-loopback address both warn; a configured secret
key never shows in ``mqbroker -p``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.config_update import RESTART_KEYS
from tests.kits.aclkit import acl_home
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv


def run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_missing_or_bad_acl_file_stops_start_up(tmp_path: Path) -> None:
    empty_home = tmp_path / "empty"
    empty_home.mkdir()
    conf = broker_conf(tmp_path, aclEnable="true", rocketmqHome=empty_home, namesrvAddr="")
    done = run("broker", "-c", str(conf))
    assert done.returncode == 2
    assert f"{empty_home}/conf/plain_acl.yml: no such file" in done.stderr

    home = acl_home(tmp_path, "accounts:\n  - accessKey: RocketMQ\n    secretKey: 1234\n")
    conf = broker_conf(tmp_path, aclEnable="true", rocketmqHome=home, namesrvAddr="")
    done = run("broker", "-c", str(conf))
    assert done.returncode == 2
    assert "plain_acl.yml:3: secretKey must be at least 7 characters" in done.stderr

    namesrv_conf = tmp_path / "namesrv.conf"
    namesrv_conf.write_text(
        f"aclEnable=true\nrocketmqHome={home}\nlistenHost=127.0.0.1\nlistenPort=0\n"
    )
    done = run("namesrv", "-c", str(namesrv_conf))
    assert done.returncode == 2 and "plain_acl.yml:3: secretKey" in done.stderr


def test_accesskey_without_secretkey_stops_start_up(tmp_path: Path) -> None:
    conf = broker_conf(tmp_path, accessKey="rocketmq2", namesrvAddr="")
    done = run("broker", "-c", str(conf))
    assert done.returncode == 2 and "accessKey and secretKey must be set together" in done.stderr


def test_open_ports_are_warned_about_loopback_and_acl_are_not(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path, listenHost="0.0.0.0")
    assert "aclEnable=false and the name server listens on 0.0.0.0" in ns.log_tail()
    open_broker = start_broker(
        processes,
        broker_conf(tmp_path, "broker-open", brokerIP1="127.0.0.2", namesrvAddr=""),
        "open",
    )
    assert "aclEnable=false and the broker listens on every interface" in open_broker.log_tail()
    local = start_broker(processes, broker_conf(tmp_path, "broker-local", namesrvAddr=""), "local")
    home = acl_home(tmp_path)
    guarded = start_broker(
        processes,
        broker_conf(
            tmp_path,
            "broker-acl",
            brokerIP1="127.0.0.2",
            aclEnable="true",
            rocketmqHome=home,
            namesrvAddr="",
        ),
        "guarded",
    )
    for quiet in (local, guarded):
        assert "aclEnable=false" not in quiet.log_tail(), quiet.name


def test_the_secret_key_is_never_printed(tmp_path: Path) -> None:
    conf = broker_conf(tmp_path, accessKey="rocketmq2", secretKey="s3cr3t-value", namesrvAddr="")
    done = run("broker", "-c", str(conf), "-p")
    assert done.returncode == 0
    assert "secretKey=******" in done.stdout.splitlines() and "s3cr3t" not in done.stdout
    assert "accessKey=rocketmq2" in done.stdout.splitlines()


@pytest.mark.parametrize("key", ["aclEnable", "accessKey", "secretKey", "plainAclFile"])
def test_acl_keys_are_taken_at_start_only(key: str) -> None:
    # updateBrokerConfig stores them for the next start instead of claiming they applied
    assert key in RESTART_KEYS
