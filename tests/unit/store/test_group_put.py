"""put_message_group: pipelined sends stored in one pass write what a put per message writes."""

from __future__ import annotations

from pathlib import Path

from broker.store.config import BrokerRole
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner, PutMessageStatus
from tests.unit.store.conftest import message, small_config

NOW_MS = 1_700_000_000_123


def _open(root: Path, **overrides: object) -> DefaultMessageStore:
    store = DefaultMessageStore(
        small_config(root, **overrides), store_host=("10.0.0.1", 10911), clock=lambda: NOW_MS
    )
    store.load()
    return store


def _messages() -> list[MessageExtBrokerInner]:
    # Several queues and topics, tags, and enough bytes to roll the 8 KiB segments twice.
    return [
        message(f"T{i % 2}", i % 3, bytes([65 + i % 26]) * (100 + i * 37 % 700), TAGS=f"t{i % 4}")
        for i in range(40)
    ]


def _queue_units(store: DefaultMessageStore) -> dict[tuple[str, int], bytes]:
    out = {}
    for topic in ("T0", "T1"):
        for queue_id in range(3):
            queue = store.find_consume_queue(topic, queue_id)
            assert queue is not None
            out[topic, queue_id] = bytes(queue.units(0, 1000) or b"")
    return out


def _log(store: DefaultMessageStore) -> bytes:
    return b"".join(bytes(f.view[: f.wrote_position]) for f in store.commit_log.queue.files)


def test_a_group_writes_the_log_and_queues_a_put_per_message_writes(tmp_path: Path) -> None:
    single, group = _open(tmp_path / "single"), _open(tmp_path / "group")
    try:
        one_by_one = [single.put_message(m) for m in _messages()]
        together = group.put_message_group(_messages())
        assert [r.status for r in together] == [PutMessageStatus.PUT_OK] * 40
        assert [
            (r.append.wrote_offset, r.append.queue_offset, r.append.msg_id) for r in together
        ] == [(r.append.wrote_offset, r.append.queue_offset, r.append.msg_id) for r in one_by_one]
        assert len(group.commit_log.queue.files) >= 3
        assert _log(group) == _log(single)
        assert _queue_units(group) == _queue_units(single)
        assert group.reput.caught_up()  # dispatched by the group itself
        assert group.stats.put_message_times_total == 40
    finally:
        single.shutdown()
        group.shutdown()


def test_a_refused_message_is_refused_alone_and_the_rest_keep_their_order(tmp_path: Path) -> None:
    store = _open(tmp_path, max_message_size=500)
    try:
        msgs = [
            message(body=b"a"),
            message(body=b"x" * 501),
            message(body=b"b"),
            message(topic="t" * 128),
        ]
        results = store.put_message_group(msgs)
        assert [r.status for r in results] == [
            PutMessageStatus.PUT_OK,
            PutMessageStatus.MESSAGE_ILLEGAL,
            PutMessageStatus.PUT_OK,
            PutMessageStatus.MESSAGE_ILLEGAL,
        ]
        assert [results[0].append.queue_offset, results[2].append.queue_offset] == [0, 1]
        queue = store.find_consume_queue("T", 0)
        assert queue is not None and queue.max_queue_offset == 2
    finally:
        store.shutdown()


def test_a_store_that_refuses_writes_answers_every_message_with_its_own_result(
    tmp_path: Path,
) -> None:
    store = _open(tmp_path, broker_role=BrokerRole.SLAVE)
    try:
        results = store.put_message_group([message(), message()])
        assert [r.status for r in results] == [PutMessageStatus.SERVICE_NOT_AVAILABLE] * 2
        assert results[0] is not results[1]  # the send processor sets each one's queue id
        assert store.max_phys_offset == 0
    finally:
        store.shutdown()
