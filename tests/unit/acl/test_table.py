"""Every request code has a decision in acl/table.py: a code the broker or the NameServer
serves without one fails here, so a new code cannot slip past the ACL unclassified."""

from __future__ import annotations

from pathlib import Path

from acl.table import RULES, Access, rule_for
from broker.config import load_broker_config
from broker.controller import BrokerController
from namesrv.config import NamesrvConfig
from namesrv.controller import NamesrvController
from remoting.codes import RequestCode as R


def test_every_request_code_we_know_is_classified() -> None:
    assert set(R) - set(RULES) == set()


def test_every_code_the_broker_serves_is_classified(tmp_path: Path) -> None:
    config, store = load_broker_config(
        {"storePathRootDir": str(tmp_path), "brokerIP1": "127.0.0.1", "listenPort": "20911"}
    )
    broker = BrokerController(config, store)
    servers = [broker.server] + ([broker.vip_server] if broker.vip_server else [])
    for server in servers:
        assert set(server.processors) - set(RULES) == set()
        assert not any(RULES[code].access is Access.PUBLIC for code in server.processors)


def test_every_code_the_namesrv_serves_is_classified(tmp_path: Path) -> None:
    namesrv = NamesrvController(NamesrvConfig(kv_config_path=tmp_path / "kv.json"))
    assert set(namesrv.server.processors) - set(RULES) == set()


def test_rocketmqs_admin_codes_and_the_namesrv_writes_are_admin_only() -> None:
    for code in (
        R.UPDATE_AND_CREATE_TOPIC,
        R.UPDATE_BROKER_CONFIG,
        R.DELETE_TOPIC_IN_BROKER,
        R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        R.DELETE_SUBSCRIPTIONGROUP,
        R.INVOKE_BROKER_TO_RESET_OFFSET,
        R.UPDATE_AND_CREATE_ACL_CONFIG,
        R.REGISTER_BROKER,
        R.UNREGISTER_BROKER,
        R.WIPE_WRITE_PERM_OF_BROKER,
        R.ADD_WRITE_PERM_OF_BROKER,
        R.PUT_KV_CONFIG,
        R.DELETE_KV_CONFIG,
        R.DELETE_TOPIC_IN_NAMESRV,
    ):
        assert RULES[code].access is Access.ADMIN, code
    assert rule_for(9999).access is Access.ADMIN  # unknown: closed


def test_message_reads_name_their_resources() -> None:
    for code in (R.PULL_MESSAGE, R.QUERY_MESSAGE, R.VIEW_MESSAGE_BY_ID, R.SEND_MESSAGE_V2):
        assert RULES[code].access is Access.RESOURCES and RULES[code].resources is not None
