"""Consumer groups whose members subscribe differently: logged once the disagreement outlives
a member's first heartbeat, at WARNING, naming what differs."""

from __future__ import annotations

import logging

import pytest

from broker.client_manager import ClientChannelInfo, ClientManager, describe_disagreement
from remoting.body import ConsumerData, SubscriptionData

GROUP = "CG"


class Clock:
    now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def manager() -> ClientManager:
    return ClientManager(clock=Clock())


def heartbeat(manager: ClientManager, client_id: str, **subscriptions: str) -> None:
    info = ClientChannelInfo(
        channel=f"conn-{client_id}", client_id=client_id, language="JAVA", version=0, last_update=0
    )
    subs = [
        SubscriptionData(topic=topic, sub_string=expr, sub_version=1)
        for topic, expr in subscriptions.items()
    ]
    manager.register_consumer(info, ConsumerData(group_name=GROUP, subscription_data_set=subs))


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_member_that_completes_its_subscriptions_on_its_second_heartbeat_is_no_alarm(
    manager, caplog
) -> None:
    with caplog.at_level(logging.INFO, logger="broker.client_manager"):
        heartbeat(manager, "c1", Orders="*", **{"%RETRY%CG": "*"})
        heartbeat(manager, "c1", Orders="*", **{"%RETRY%CG": "*"})
        heartbeat(manager, "c2", Orders="*")  # ali-ons: retry topic not subscribed yet
        heartbeat(manager, "c2", Orders="*", **{"%RETRY%CG": "*"})
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_disagreement_that_persists_is_warned_about_once_with_what_differs(
    manager, caplog
) -> None:
    with caplog.at_level(logging.INFO, logger="broker.client_manager"):
        for _ in range(2):
            heartbeat(manager, "c1", Orders="TagA")
            heartbeat(manager, "c2", Orders="TagB", Audit="*")
        for _ in range(3):
            heartbeat(manager, "c1", Orders="TagA")
            heartbeat(manager, "c2", Orders="TagB", Audit="*")
    [line] = warnings(caplog)
    assert "consumer group CG: members subscribe differently" in line
    assert "Audit: '*' by c2; not by c1 | Orders: 'TagA' by c1; 'TagB' by c2" in line

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="broker.client_manager"):
        heartbeat(manager, "c2", Orders="TagA")
    assert warnings(caplog) == []
    assert "members subscribe alike again" in caplog.text


def test_a_dissenter_leaving_ends_the_disagreement(manager, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="broker.client_manager"):
        for _ in range(2):
            heartbeat(manager, "c1", Orders="TagA")
            heartbeat(manager, "c2", Orders="TagB")
        assert len(warnings(caplog)) == 1
        manager.unregister_consumer(GROUP, "conn-c2")
    assert "members subscribe alike again" in caplog.text


def test_one_client_in_two_groups_keeps_each_groups_subscriptions_apart(manager) -> None:
    info = ClientChannelInfo(
        channel="conn", client_id="c1", language="JAVA", version=0, last_update=0
    )
    manager.register_consumer(
        info, ConsumerData(group_name="G1", subscription_data_set=[SubscriptionData(topic="A")])
    )
    manager.register_consumer(
        info, ConsumerData(group_name="G2", subscription_data_set=[SubscriptionData(topic="B")])
    )
    assert manager.consumer_groups["G1"].channels["conn"].subscriptions == {"A": "*"}
    assert manager.consumer_groups["G2"].channels["conn"].subscriptions == {"B": "*"}


def test_members_that_agree_describe_no_difference() -> None:
    same = {"T": "a || b", "%RETRY%G": "*"}
    assert describe_disagreement({"c1": same, "c2": dict(same)}) == ()
    assert describe_disagreement({}) == ()
