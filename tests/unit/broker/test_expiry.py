"""What lapses on the broker, by an injected clock (milliseconds): a client channel without a
heartbeat for 120 s, and an orderly consumer's queue lock not renewed for
rebalanceLockMaxLiveTime (60 s)."""

from __future__ import annotations

from broker.client_manager import ClientChannelInfo, ClientManager
from broker.rebalance_lock import RebalanceLockManager
from remoting.body import ConsumerData, MessageQueue, SubscriptionData
from tests.unit.broker.test_client_manager import GROUP, Clock

MQ = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)


def heartbeat(manager: ClientManager, clock: Clock, client_id: str) -> None:
    """A HEART_BEAT as the processor records it: stamped with the broker's clock."""
    info = ClientChannelInfo(
        channel=f"conn-{client_id}",
        client_id=client_id,
        language="JAVA",
        version=0,
        last_update=clock(),
    )
    subs = [SubscriptionData(topic="Orders", sub_string="*", sub_version=1)]
    manager.register_consumer(info, ConsumerData(group_name=GROUP, subscription_data_set=subs))


def test_a_consumer_without_a_heartbeat_for_120_s_expires_and_the_group_hears_it() -> None:
    clock, changed = Clock(), []
    manager = ClientManager(clock=clock, on_group_changed=lambda g, chs: changed.append(chs))
    heartbeat(manager, clock, "c1")
    heartbeat(manager, clock, "c2")
    changed.clear()
    clock.now += 60_000
    heartbeat(manager, clock, "c2")
    clock.now += 60_000
    assert manager.scan_expired() == []  # c1 silent exactly 120 s: not yet (Java: >)
    clock.now += 1
    assert manager.scan_expired() == ["conn-c1"]
    assert list(manager.consumer_groups[GROUP].channels) == ["conn-c2"]
    assert changed == [["conn-c2"]]  # the survivor is told to rebalance
    clock.now += 60_000
    assert manager.scan_expired() == ["conn-c2"]
    assert GROUP not in manager.consumer_groups


def test_a_queue_lock_lapses_unless_renewed() -> None:
    clock = Clock()
    locks = RebalanceLockManager(clock, max_live_ms=60_000)
    assert locks.try_lock_batch(GROUP, [MQ], "c1") == [MQ]
    clock.now += 40_000
    assert locks.try_lock_batch(GROUP, [MQ], "c2") == []
    assert locks.try_lock_batch(GROUP, [MQ], "c1") == [MQ]  # renewed: 60 s from now
    clock.now += 60_000
    assert locks.is_locked(GROUP, MQ, "c1") and locks.try_lock_batch(GROUP, [MQ], "c2") == []
    clock.now += 1
    assert not locks.is_locked(GROUP, MQ, "c1")
    assert locks.try_lock_batch(GROUP, [MQ], "c2") == [MQ]  # a dead holder's lock lapsed


def test_only_the_holder_unlocks() -> None:
    locks = RebalanceLockManager(Clock())
    locks.try_lock_batch(GROUP, [MQ], "c1")
    locks.unlock_batch(GROUP, [MQ], "c2")
    assert locks.is_locked(GROUP, MQ, "c1")
    locks.unlock_batch(GROUP, [MQ], "c1")
    assert locks.try_lock_batch(GROUP, [MQ], "c2") == [MQ]
