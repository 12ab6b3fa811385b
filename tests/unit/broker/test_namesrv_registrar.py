"""What the NameServers' replies to a registration change on the broker: a slave's master (the
HA side is woken once per new master), the fence after a promotion (kept), ordered topics; and
a request for registration is one round, not a loop."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from broker.config import BrokerConfig
from broker.namesrv_registrar import HaState, NamesrvRegistrar
from broker.persist import JsonConfigFile
from broker.registration import RegisterResult
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.topic_config import TopicConfigManager
from remoting.body import TopicConfig


class FakeOuter:
    """BrokerOuterAPI's surface: the replies each round gets, and the rounds counted."""

    def __init__(self, namesrv_addrs: list[str], replies: list[RegisterResult]) -> None:
        self.namesrv_addrs = namesrv_addrs
        self.replies = replies
        self.rounds = 0

    async def register_all(self, identity, topics, timeout_s) -> list[RegisterResult]:
        self.rounds += 1
        return list(self.replies)


def registrar(tmp_path: Path, role: BrokerRole) -> NamesrvRegistrar:
    config = BrokerConfig(
        broker_name="broker-a", broker_id=0 if role is not BrokerRole.SLAVE else 1
    )
    store_config = MessageStoreConfig(store_path_root_dir=tmp_path, broker_role=role)
    topics = TopicConfigManager(
        JsonConfigFile(tmp_path / "topics.json"), cluster_name="C", broker_name="broker-a"
    )
    topics.table["Ordered"] = TopicConfig(topic_name="Ordered")
    topics.table["Plain"] = TopicConfig(topic_name="Plain", order=True)
    return NamesrvRegistrar(config, store_config, topics, HaState())


def reply(**fields: object) -> RegisterResult:
    values: dict[str, object] = dict(
        namesrv_addr="ns:9876", master_addr=None, ha_server_addr=None, order_topics=None
    )
    values.update(fields)
    return RegisterResult(**values)  # type: ignore[arg-type]


async def test_a_slave_learns_its_master_and_wakes_the_ha_side_once(tmp_path: Path) -> None:
    subject = registrar(tmp_path, BrokerRole.SLAVE)
    first_wait = subject.ha.changed
    master = reply(master_addr="10.0.0.1:10911", ha_server_addr="10.0.0.1:10912")
    subject.outer = FakeOuter(["ns:9876", "ns:9877"], [master, master])  # type: ignore[assignment]
    await subject.register_all()
    assert (subject.ha.master_addr, subject.ha.ha_master_addr) == (
        "10.0.0.1:10911",
        "10.0.0.1:10912",
    )
    assert first_wait.is_set()
    second_wait = subject.ha.changed
    await subject.register_all()  # the same master again: nobody is woken
    assert not second_wait.is_set()


async def test_a_master_ignores_master_addresses_and_keeps_a_fence(tmp_path: Path) -> None:
    subject = registrar(tmp_path, BrokerRole.ASYNC_MASTER)
    fence = "FENCED broker-a: its slave was promoted"
    outer = FakeOuter(["ns:9876"], [reply(master_addr="10.0.0.9:10911"), reply(fenced=fence)])
    subject.outer = outer  # type: ignore[assignment]
    await subject.register_all()
    assert subject.ha.master_addr is None
    assert subject.fenced == fence
    outer.replies = [reply()]
    await subject.register_all()
    assert subject.fenced == fence  # a NameServer that says nothing does not lift it


async def test_ordered_topics_follow_the_namesrv(tmp_path: Path) -> None:
    subject = registrar(tmp_path, BrokerRole.ASYNC_MASTER)
    subject.outer = FakeOuter(["ns:9876"], [reply(order_topics={"Ordered": "broker-a:4"})])  # type: ignore[assignment]
    await subject.register_all()
    assert subject.topics.table["Ordered"].order is True
    assert subject.topics.table["Plain"].order is False


# A loop that spins never lets the autojump clock move: the short timeout turns a hang into a
# failure.
@pytest.mark.timeout(20)
async def test_a_request_is_one_round(tmp_path: Path, autojump_clock) -> None:
    subject = registrar(tmp_path, BrokerRole.ASYNC_MASTER)
    outer = FakeOuter(["ns:9876"], [reply()])
    async with trio.open_nursery() as nursery:
        await nursery.start(subject.run, outer)
        assert outer.rounds == 1  # started: registered once
        subject.request()
        await trio.sleep(1)
        assert outer.rounds == 2
        await trio.sleep(5)
        assert outer.rounds == 2  # no new request, period (30 s) not over
        await trio.sleep(30)
        assert outer.rounds == 3
        nursery.cancel_scope.cancel()


@pytest.mark.timeout(20)
async def test_without_namesrvs_a_request_does_not_spin(tmp_path: Path, autojump_clock) -> None:
    subject = registrar(tmp_path, BrokerRole.ASYNC_MASTER)
    outer = FakeOuter([], [])
    async with trio.open_nursery() as nursery:
        await nursery.start(subject.run, outer)
        subject.request()
        await trio.sleep(1)
        assert not subject._register_now.is_set()
        nursery.cancel_scope.cancel()
