"""Allocation strategies split queues as RocketMQ's do, and every queue has exactly one owner."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from client.allocate import averagely, averagely_by_circle, by_config, consistent_hash
from remoting.body import MessageQueue

MQS = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in range(8)]
CIDS = ["c0", "c1", "c2"]


def ids(mqs: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in mqs]


def test_averagely_gives_contiguous_blocks_and_the_remainder_to_the_first() -> None:
    assert [ids(averagely(c, MQS, CIDS)) for c in CIDS] == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_averagely_with_more_consumers_than_queues_leaves_the_last_idle() -> None:
    two = MQS[:2]
    assert [ids(averagely(c, two, CIDS)) for c in CIDS] == [[0], [1], []]


def test_by_circle_deals_queues_round_robin() -> None:
    assert [ids(averagely_by_circle(c, MQS, CIDS)) for c in CIDS] == [[0, 3, 6], [1, 4, 7], [2, 5]]


def test_unknown_client_gets_nothing() -> None:
    assert averagely("stranger", MQS, CIDS) == []
    assert consistent_hash()("stranger", MQS, CIDS) == []


def test_by_config_ignores_the_group() -> None:
    assert by_config(MQS[:1])("c2", MQS, CIDS) == MQS[:1]


@given(
    st.integers(min_value=1, max_value=40),
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=10, unique=True),
)
def test_every_queue_has_exactly_one_owner(queues: int, cids: list[str]) -> None:
    mqs = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in range(queues)]
    cids = sorted(cids)
    for strategy in (averagely, averagely_by_circle, consistent_hash()):
        owned = [mq for c in cids for mq in strategy(c, mqs, cids)]
        assert sorted(owned) == mqs


def test_consistent_hash_moves_few_queues_when_a_member_leaves() -> None:
    mqs = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in range(64)]
    strategy = consistent_hash()
    before = {mq: c for c in CIDS for mq in strategy(c, mqs, CIDS)}
    after = {mq: c for c in CIDS[1:] for mq in strategy(c, mqs, CIDS[1:])}
    moved = [mq for mq in mqs if before[mq] != after[mq]]
    assert all(before[mq] == "c0" for mq in moved)  # only the leaver's queues move
