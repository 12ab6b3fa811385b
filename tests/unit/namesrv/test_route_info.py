"""RouteInfoManager as pure state: registration rules, expiry by an injected clock, removal."""

from __future__ import annotations

import pytest

from namesrv.route_info import BrokerRegistration, RouteInfoManager
from remoting import constants as K
from remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper

MASTER, SLAVE = "10.0.0.1:10911", "10.0.0.2:10911"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def tc(name: str, queues: int = 16) -> TopicConfig:
    return TopicConfig(topic_name=name, read_queue_nums=queues, write_queue_nums=queues)


def topics(*configs: TopicConfig, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={c.topic_name: c for c in configs},
        data_version=DataVersion(counter=counter, timestamp=counter),
    )


def reg(
    addr: str = MASTER,
    broker_id: int = 0,
    *,
    name: str = "broker-a",
    cluster: str = "DefaultCluster",
    wrapper: TopicConfigSerializeWrapper | None = None,
    channel: object = None,
    filters: list[str] | None = None,
) -> BrokerRegistration:
    return BrokerRegistration(
        cluster_name=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=broker_id,
        ha_server_addr=addr.replace("10911", "10912"),
        topics=wrapper,
        filter_servers=filters,
        channel=channel,
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def routes(clock: Clock) -> RouteInfoManager:
    return RouteInfoManager(clock, expired_ms=120_000)


def test_master_topics_make_the_route(routes: RouteInfoManager) -> None:
    result = routes.register_broker(reg(wrapper=topics(tc("T", 4))))
    assert result.master_addr is None
    route = routes.pickup_topic_route_data("T")
    assert route is not None
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [
        ("broker-a", 4, 4)
    ]
    assert [b.broker_addrs for b in route.broker_datas] == [{0: MASTER}]
    assert routes.pickup_topic_route_data("Unknown") is None


def test_slave_learns_its_master_and_its_topics_are_ignored(routes: RouteInfoManager) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T", 4))))
    result = routes.register_broker(
        reg(
            SLAVE,
            1,
            wrapper=topics(tc("OnlySlave", 8)),
        )
    )
    assert (result.master_addr, result.ha_server_addr) == (MASTER, "10.0.0.1:10912")
    assert routes.pickup_topic_route_data("OnlySlave") is None
    route = routes.pickup_topic_route_data("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: MASTER, 1: SLAVE}


def test_a_slave_without_a_live_master_gets_no_master(routes: RouteInfoManager) -> None:
    assert routes.register_broker(reg(SLAVE, 1)).master_addr is None


def test_topic_config_is_taken_only_when_the_data_version_changes(
    routes: RouteInfoManager,
) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T", 4), counter=1)))
    routes.register_broker(reg(wrapper=topics(tc("T", 8), counter=1)))
    assert routes.pickup_topic_route_data("T").queue_datas[0].read_queue_nums == 4
    assert not routes.is_broker_topic_config_changed(MASTER, DataVersion(counter=1, timestamp=1))
    routes.register_broker(reg(wrapper=topics(tc("T", 8), counter=2)))
    assert routes.pickup_topic_route_data("T").queue_datas[0].read_queue_nums == 8


def test_silent_brokers_expire_and_touched_ones_stay(
    routes: RouteInfoManager, clock: Clock
) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T"))))
    routes.register_broker(reg(SLAVE, 1, channel="slave-conn"))
    clock.now += 100_000
    routes.touch(MASTER)
    clock.now += 20_001  # the slave: 120,001 ms silent; the master: 20,001
    assert routes.scan_not_active_broker() == [(SLAVE, "slave-conn")]
    assert routes.pickup_topic_route_data("T").broker_datas[0].broker_addrs == {0: MASTER}
    clock.now += 120_001
    assert [addr for addr, _ in routes.scan_not_active_broker()] == [MASTER]
    assert routes.pickup_topic_route_data("T") is None
    assert routes.cluster_info().broker_addr_table == {}


def test_a_closed_connection_removes_exactly_its_broker(routes: RouteInfoManager) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T")), channel="a"))
    routes.register_broker(
        reg(
            "10.0.0.3:10911",
            name="broker-b",
            wrapper=topics(tc("T")),
            channel="b",
        )
    )
    assert routes.on_channel_destroy("b") == "10.0.0.3:10911"
    route = routes.pickup_topic_route_data("T")
    assert [b.broker_name for b in route.broker_datas] == ["broker-a"]
    assert routes.on_channel_destroy("unknown") is None


def test_unregistering_the_last_broker_of_a_topic_removes_the_topic(
    routes: RouteInfoManager,
) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T"))))
    routes.register_broker(reg(SLAVE, 1))
    routes.unregister_broker("DefaultCluster", SLAVE, "broker-a", 1)
    assert routes.pickup_topic_route_data("T").broker_datas[0].broker_addrs == {0: MASTER}
    routes.unregister_broker("DefaultCluster", MASTER, "broker-a", 0)
    assert routes.pickup_topic_route_data("T") is None
    assert routes.all_topics() == [] and routes.cluster_info().cluster_addr_table == {}


def test_a_promoted_slave_keeps_one_id_per_address(routes: RouteInfoManager) -> None:
    routes.register_broker(reg(SLAVE, 1))
    routes.register_broker(reg(SLAVE, 0, wrapper=topics(tc("T"))))
    assert routes.pickup_topic_route_data("T").broker_datas[0].broker_addrs == {0: SLAVE}


def test_default_topic_route_comes_from_brokers_that_allow_auto_creation(
    routes: RouteInfoManager,
) -> None:
    routes.register_broker(reg(wrapper=topics(tc(K.DEFAULT_TOPIC, 8))))
    route = routes.pickup_topic_route_data(K.DEFAULT_TOPIC)
    assert route is not None and route.queue_datas[0].write_queue_nums == 8


def test_delete_topic_in_one_cluster_or_everywhere(routes: RouteInfoManager) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T"))))
    routes.register_broker(
        reg(
            "10.0.0.3:10911",
            name="broker-b",
            cluster="Other",
            wrapper=topics(tc("T")),
        )
    )
    routes.delete_topic("T", "Other")
    assert [q.broker_name for q in routes.pickup_topic_route_data("T").queue_datas] == ["broker-a"]
    routes.delete_topic("T")
    assert routes.pickup_topic_route_data("T") is None


def test_write_permission_wiped_and_restored(routes: RouteInfoManager) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T"), tc("U"))))
    assert routes.set_write_perm("broker-a", wipe=True) == 2
    assert routes.pickup_topic_route_data("T").queue_datas[0].perm == K.PERM_READ
    assert routes.set_write_perm("broker-a", wipe=False) == 2
    assert routes.pickup_topic_route_data("U").queue_datas[0].perm == K.PERM_READ | K.PERM_WRITE


def test_filter_servers_appear_in_the_route_and_an_empty_list_clears_them(
    routes: RouteInfoManager,
) -> None:
    routes.register_broker(reg(wrapper=topics(tc("T")), filters=["10.0.0.9:3000"]))
    assert routes.pickup_topic_route_data("T").filter_server_table == {MASTER: ["10.0.0.9:3000"]}
    routes.register_broker(reg(wrapper=topics(tc("T")), filters=[]))
    assert routes.pickup_topic_route_data("T").filter_server_table == {}


def versioned(state_version: int | None) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={"T": tc("T")},
        data_version=DataVersion(counter=1, timestamp=1, state_version=state_version),
    )


def test_a_master_of_an_older_controller_epoch_does_not_replace_the_newer(clock):
    """RocketMQ 5's stateVersion rule: the auto-failover's new master (epoch 4) keeps id 0
    when the old master (epoch 3, fenced but still registering) comes around again."""
    routes = RouteInfoManager(clock)
    routes.register_broker(reg(MASTER, wrapper=versioned(3)))
    routes.register_broker(reg(SLAVE, wrapper=versioned(4)))  # elected: re-registers as id 0
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: SLAVE}
    routes.register_broker(reg(MASTER, wrapper=versioned(3)))  # the old one, later
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: SLAVE}
    assert MASTER not in routes.broker_live_table
    routes.register_broker(reg(MASTER, wrapper=versioned(5)))  # elected again, newer
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: MASTER}


def test_brokers_without_a_state_version_replace_each_other_as_in_4x(clock):
    routes = RouteInfoManager(clock)
    routes.register_broker(reg(MASTER, wrapper=versioned(None)))
    routes.register_broker(reg(SLAVE, wrapper=versioned(None)))
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: SLAVE}
