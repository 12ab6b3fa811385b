"""The controller-mode keys of broker.conf: refused naming the key, never half-applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ConfigError, load_broker_config
from broker.store.config import BrokerRole


def load(tmp_path: Path, **props: str):
    base = {"storePathRootDir": str(tmp_path / "store"), "enableControllerMode": "true"}
    return load_broker_config({**base, **props}, warn=False)


ETCD = "http://127.0.0.1:2379"


@pytest.mark.parametrize(
    "props, message",
    [
        ({"brokerId": "1"}, "controllerEtcdEndpoints='': enableControllerMode=true needs etcd"),
        ({"brokerId": "0", "controllerEtcdEndpoints": ETCD}, "brokerId='0'"),
        ({"brokerId": "1", "controllerEtcdEndpoints": "127.0.0.1:2379"}, "not http"),
        ({"brokerId": "1", "controllerEtcdEndpoints": "http://h:1/v3"}, "more than scheme"),
        ({"brokerId": "1", "controllerEtcdEndpoints": "http://h"}, "not http"),
        (
            {"brokerId": "1", "controllerEtcdEndpoints": ETCD, "brokerRole": "SLAVE"},
            "brokerRole='SLAVE'",
        ),
        (
            {
                "brokerId": "1",
                "controllerEtcdEndpoints": ETCD,
                "controllerHeartBeatTimeoutMills": "500",
            },
            "controllerHeartBeatTimeoutMills",
        ),
        ({"brokerId": "1", "controllerEtcdEndpoints": ETCD, "controllerEtcdPrefix": "x"}, "'/'"),
    ],
)
def test_refusals_name_the_key(tmp_path, props, message):
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, **props)


def test_a_member_with_its_master_kind(tmp_path):
    broker, store = load(
        tmp_path,
        brokerId="3",
        brokerRole="SYNC_MASTER",
        controllerEtcdEndpoints=f"{ETCD}, http://10.0.0.2:2379",
        controllerHeartBeatTimeoutMills="2500",
    )
    assert broker.broker_id == 3 and store.broker_role is BrokerRole.SYNC_MASTER
    assert broker.etcd_endpoints == [ETCD, "http://10.0.0.2:2379"]
    assert broker.lease_ttl_s == 3


def test_off_by_default_and_a_4x_conf_is_unchanged(tmp_path):
    broker, store = load_broker_config(
        {"storePathRootDir": str(tmp_path / "s"), "brokerId": "1"}, warn=False
    )
    assert not broker.enable_controller_mode and store.broker_role is BrokerRole.SLAVE
