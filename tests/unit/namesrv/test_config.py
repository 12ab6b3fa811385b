"""namesrv.conf: RocketMQ's key names; a bad value names the key, the value and the reason."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from namesrv.config import ConfigError, config_lines, load_namesrv_config


def test_defaults_and_conversions() -> None:
    assert load_namesrv_config({}).listen_port == 9876
    config = load_namesrv_config(
        {"listenPort": " 9877 ", "orderMessageEnable": "TRUE", "kvConfigPath": "/data/kv.json"}
    )
    assert (config.listen_port, config.order_message_enable) == (9877, True)
    assert str(config.kv_config_path) == "/data/kv.json"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("listenPort", "nine", "expected an integer"),
        ("listenPort", "70000", "65535"),
        ("orderMessageEnable", "yes", "true or false"),
        ("scanNotActiveBrokerInterval", "0", "between 1 and"),
    ],
)
def test_a_bad_value_names_the_key_the_value_and_the_reason(key, value, reason) -> None:
    with pytest.raises(ConfigError) as caught:
        load_namesrv_config({key: value})
    assert f"{key}={value!r}" in str(caught.value) and reason in str(caught.value)


def test_unknown_keys_are_warned_about_known_unused_ones_are_not(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="namesrv.config"):
        load_namesrv_config({"serverWorkerThreads": "8", "lisenPort": "1"})
    assert "lisenPort" in caplog.text and "serverWorkerThreads" not in caplog.text


def test_print_config_in_rocketmq_spelling() -> None:
    lines = dict(line.split("=", 1) for line in config_lines(load_namesrv_config({})))
    assert lines["listenPort"] == "9876" and lines["orderMessageEnable"] == "false"


def test_mqnamesrv_refuses_to_start_on_a_bad_value(tmp_path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("listenPort=70000\n")
    done = subprocess.run(
        [sys.executable, "-m", "namesrv", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "listenPort='70000'" in done.stderr


def test_the_runtime_file_sits_beside_kv_config_unless_named(tmp_path) -> None:
    from namesrv.config_update import start_config

    kv = tmp_path / "ns" / "kvConfig.json"
    runtime, config = start_config({"kvConfigPath": str(kv)}, None)
    assert runtime.path == config.config_store_path == kv.parent / "namesrv.properties"
    named = tmp_path / "elsewhere" / "ns.properties"
    runtime, _ = start_config({"kvConfigPath": str(kv), "configStorePath": str(named)}, None)
    assert runtime.path == named


def test_a_start_reads_the_runtime_file_over_the_start_up_file(tmp_path) -> None:
    from namesrv.config_update import start_config

    kv = tmp_path / "kvConfig.json"
    (tmp_path / "namesrv.properties").write_text("orderMessageEnable=true\nkvConfigPath=/x\n")
    startup = {"kvConfigPath": str(kv), "orderMessageEnable": "false"}
    runtime, config = start_config(startup, tmp_path / "namesrv.conf")
    assert config.order_message_enable is True
    assert config.kv_config_path == kv  # black-listed in the runtime file: ignored
    assert runtime.layered_lines() == ["orderMessageEnable='true' (start-up: 'false')"]
