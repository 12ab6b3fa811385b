"""RocketMQ's tls.* keys in broker.conf and namesrv.conf: Java's names, typed and checked like
every key, Java's precedence (tls.config.file over the conf, but never for the mode), useTLS's
default, and key passwords never shown."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.config import ConfigError, config_lines, load_broker_config
from broker.config_update import plan_update
from namesrv.config import config_lines as namesrv_config_lines
from namesrv.config import load_namesrv_config
from remoting import tls_config
from remoting.tls_config import TlsMode, client_uses_tls, from_file, merge_file, tls_keys

BASE = {"brokerName": "broker-a", "brokerIP1": "127.0.0.1"}


def test_defaults_are_java_s_but_the_mode_which_is_disabled() -> None:
    broker, _ = load_broker_config(BASE)
    namesrv = load_namesrv_config({})
    for config in (broker, namesrv):
        assert config.tls_server_mode is TlsMode.disabled  # Java: permissive
        assert config.tls_test_mode_enable is True
        assert config.client_auth == "none"
        assert config.tls_client_auth_server is False and config.tls_server_auth_client is False
    assert broker.use_tls is None and broker.ha_use_tls is False


def test_the_keys_take_java_s_spelling_in_both_files() -> None:
    conf = {
        "tls.server.mode": "enforcing",
        "tls.server.certPath": "/etc/rocketmq/server.pem",
        "tls.server.keyPath": "/etc/rocketmq/server.key",
        "tls.server.need.client.auth": "REQUIRE",  # Java's parseClientAuthMode ignores case
        "tls.server.trustCertPath": "/etc/rocketmq/ca.pem",
        "tls.client.authServer": "true",
        "tls.test.mode.enable": "false",
    }
    broker, _ = load_broker_config({**BASE, **conf, "useTLS": "true", "haUseTLS": "true"})
    namesrv = load_namesrv_config(conf)
    for config in (broker, namesrv):
        assert config.tls_server_mode is TlsMode.enforcing
        assert config.tls_server_cert_path == Path("/etc/rocketmq/server.pem")
        assert config.client_auth == "require"
        assert config.verifies_server
    assert broker.use_tls is True and broker.ha_use_tls is True


LOADERS = {
    "broker.conf": lambda conf: load_broker_config({**BASE, **conf}),
    "namesrv.conf": load_namesrv_config,
}


@pytest.mark.parametrize("where", LOADERS)
@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("tls.server.mode", "strict", "expected one of disabled, permissive, enforcing"),
        ("tls.server.mode", "ENFORCING", "expected one of"),  # Java compares case-sensitively
        ("tls.server.need.client.auth", "always", "expected one of none, optional, require"),
        ("tls.test.mode.enable", "yes", "true or false"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(
    where: str, key: str, value: str, reason: str
) -> None:
    # Java reads an unknown mode as permissive and an unknown auth as none, silently.
    with pytest.raises(ConfigError) as refused:
        LOADERS[where]({key: value})
    assert f"{key}={value!r}" in str(refused.value) and reason in str(refused.value)


@pytest.mark.parametrize(
    ("conf", "uses"),
    [
        ({}, False),
        ({"tls.server.mode": "permissive"}, False),
        ({"tls.server.mode": "enforcing"}, True),  # BrokerStartup: tls.enable's default
        ({"tls.server.mode": "enforcing", "tls.enable": "false"}, False),
        ({"tls.enable": "true"}, True),
        ({"tls.enable": "true", "useTLS": "false"}, False),  # broker.conf's useTLS wins
        ({"useTLS": "true"}, True),
    ],
)
def test_use_tls_defaults_as_broker_startup_sets_it(conf: dict[str, str], uses: bool) -> None:
    broker, _ = load_broker_config({**BASE, **conf})
    assert client_uses_tls(tls_keys(broker), broker.use_tls) is uses


def test_the_file_wins_over_the_conf_but_never_sets_the_mode(caplog) -> None:
    broker, _ = load_broker_config(
        {**BASE, "tls.server.mode": "permissive", "tls.server.certPath": "/conf/server.pem"}
    )
    file_says = {
        "tls.server.certPath": "/file/server.pem",
        "tls.server.mode": "disabled",
        "tls.enable": "true",
        "tls.client.authServer": "true",
        "tls.sever.keyPath": "/typo",
    }
    with caplog.at_level(logging.WARNING, logger="remoting.tls_config"):
        keys = merge_file(tls_keys(broker), file_says, "tls.properties")
    assert keys.tls_server_cert_path == Path("/file/server.pem")
    assert keys.tls_client_auth_server is True
    assert keys.tls_server_mode is TlsMode.permissive and keys.tls_enable is None
    assert "tls.enable, tls.server.mode ignored" in caplog.text
    assert "unknown keys ignored: tls.sever.keyPath" in caplog.text


def test_a_bad_value_in_the_file_names_the_file_and_the_key() -> None:
    keys = tls_keys(load_namesrv_config({}))
    with pytest.raises(ConfigError) as refused:
        merge_file(
            keys, {"tls.server.need.client.auth": "sometimes"}, "/etc/rocketmq/tls.properties"
        )
    assert str(refused.value).startswith("/etc/rocketmq/tls.properties: bad value for ")
    assert "tls.server.need.client.auth='sometimes'" in str(refused.value)


def test_a_named_file_must_exist_java_s_default_is_read_only_if_it_does(
    tmp_path, monkeypatch
) -> None:
    named = load_namesrv_config({"tls.config.file": str(tmp_path / "missing.properties")})
    with pytest.raises(ConfigError) as refused:
        from_file(tls_keys(named))
    assert "tls.config.file=" in str(refused.value) and "no such file" in str(refused.value)
    default = tmp_path / "tls.properties"
    monkeypatch.setattr(tls_config, "DEFAULT_TLS_CONFIG_FILE", default)
    keys = tls_keys(load_namesrv_config({}))
    assert from_file(keys) == keys
    default.write_text("tls.client.trustCertPath=/ca.pem\n")
    assert from_file(keys).tls_client_trust_cert_path == Path("/ca.pem")


def test_key_passwords_are_never_shown() -> None:
    conf = {"tls.server.keyPassword": "hunter2", "tls.client.keyPassword": "hunter3"}
    broker, store = load_broker_config({**BASE, **conf})
    namesrv = load_namesrv_config(conf)
    shown = "\n".join(
        [*config_lines(broker, store), *namesrv_config_lines(namesrv), repr(broker), repr(namesrv)]
    )
    assert "hunter" not in shown
    assert "tls.server.keyPassword=******" in shown and "tls.client.keyPassword=******" in shown


def test_tls_keys_change_at_the_next_start_only() -> None:
    update = plan_update(
        BASE, {"tls.server.mode": "enforcing", "useTLS": "true", "haUseTLS": "true"}
    )
    assert update.live == []
    assert update.at_restart == ["haUseTLS", "tls.server.mode", "useTLS"]
