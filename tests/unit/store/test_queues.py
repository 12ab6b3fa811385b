"""ConsumeQueues and the index agree with the CommitLog after many mixed puts."""

from __future__ import annotations

import random

from broker.store.consume_queue import CQ_UNIT
from broker.store.index_service import IndexService
from broker.store.types import DispatchRequest, MessageExtBrokerInner
from remoting import message as codec
from remoting.record import iter_records
from tests.unit.store.conftest import StoreFactory, message


def check_queues_match_log(store) -> dict[tuple[str, int], list[int]]:
    """Every record in the log has exactly one unit at its queue offset, and every unit points
    at a record of its queue."""
    by_queue: dict[tuple[str, int], list[int]] = {}
    for mapped in store.commit_log.queue.files:
        for _, scan in iter_records(mapped.view[: mapped.wrote_position]):
            by_queue.setdefault((scan.topic, scan.queue_id), []).append(scan.phys_offset)
            request = store.commit_log.dispatch_request(scan)
            unit = store.find_consume_queue(scan.topic, scan.queue_id).unit(scan.queue_offset)
            assert unit == (scan.phys_offset, scan.size, request.tags_code)
    for (topic, queue_id), offsets in by_queue.items():
        consume_queue = store.find_consume_queue(topic, queue_id)
        assert consume_queue.max_queue_offset == len(offsets)
        units = [
            CQ_UNIT.unpack(bytes(consume_queue.units(q, 1)))[0]
            for q in range(consume_queue.max_queue_offset)
        ]
        assert units == offsets
    return by_queue


def test_thousands_of_mixed_puts_across_topics_and_queues(stores: StoreFactory) -> None:
    store = stores.open()
    rng = random.Random(7)
    expected: dict[tuple[str, int], int] = {}
    topic_of_key: dict[str, str] = {}
    for i in range(3000):
        topic, queue_id = f"topic-{rng.randrange(5)}", rng.randrange(4)
        if rng.random() < 0.1:
            entries = [
                (0, b"b" * rng.randrange(50), f"TAGS\x01t{j}") for j in range(rng.randrange(1, 6))
            ]
            result = store.put_messages(
                MessageExtBrokerInner(
                    topic=topic, queue_id=queue_id, body=codec.encode_batch_body(entries)
                )
            )
            count = len(entries)
        else:
            result = store.put_message(
                message(
                    topic=topic,
                    queue_id=queue_id,
                    body=b"m" * rng.randrange(300),
                    TAGS=f"t{i % 7}",
                    KEYS=f"k{i}",
                )
            )
            count = 1
            topic_of_key[f"k{i}"] = topic
        assert result.ok
        expected[(topic, queue_id)] = expected.get((topic, queue_id), 0) + count
    by_queue = check_queues_match_log(store)
    assert {k: len(v) for k, v in by_queue.items()} == expected
    assert len(store.find_consume_queue("topic-0", 0).queue.files) > 1  # CQ files rolled too
    for key in ("k3", "k999", "k2998"):
        if key in topic_of_key:
            found = store.query_message(topic_of_key[key], key, 8, 0, 2**62).buffers
            assert [codec.decode_message(b).keys for b in found] == [key]


def test_batch_keys_are_indexed_across_index_files(stores: StoreFactory) -> None:
    store = stores.open(max_index_num=50)  # every batch below outgrows the current index file
    for batch in range(6):
        entries = [
            (0, b"x", f"KEYS\x01b{batch}-{i} shared\x02UNIQ_KEY\x01U{batch}-{i}") for i in range(12)
        ]
        body = codec.encode_batch_body(entries)
        assert store.put_messages(MessageExtBrokerInner(topic="B", queue_id=0, body=body)).ok
    assert len(store.index_service.files) > 1
    assert len(store.find_consume_queue("B", 0).queue.files) > 1  # a batch crossed a CQ file
    assert {k: len(v) for k, v in check_queues_match_log(store).items()} == {("B", 0): 72}
    for batch in range(6):
        for i in (0, 11):
            found = store.query_message("B", f"b{batch}-{i}", 8, 0, 2**62).buffers
            assert [codec.decode_message(b).keys for b in found] == [f"b{batch}-{i} shared"]
    newest = store.query_message("B", "shared", 64, 0, 2**62).buffers
    assert len(newest) == 64 and len({bytes(b) for b in newest}) == 64


def test_the_index_is_the_same_whether_records_come_one_by_one_or_in_runs(tmp_path) -> None:
    """Puts index a message at a time; recovery, reput and slaves a run at a time. Each entry's
    time diff is from the file's begin as it stands before it (Java's putKey), so both write
    the same files, across file boundaries too."""
    requests = [
        DispatchRequest(
            "T",
            i % 3,
            1000 * i,
            900,
            0,
            1_700_000_000_000 + 700 * i,
            i // 3,
            f"k{i} k",
            f"U{i}",
            0,
            {},
        )
        for i in range(200)
    ]
    one_by_one = IndexService(tmp_path / "a", 7, 45)
    for request in requests:
        one_by_one.build_index_batch((request,))
    in_runs = IndexService(tmp_path / "b", 7, 45)
    start = 0
    for size in [1, 5, 17, 2, 40, 3] * 10:
        if start < len(requests):
            in_runs.build_index_batch(requests[start : start + size])
        start += size
    assert len(one_by_one.files) == len(in_runs.files) > 5
    for a, b in zip(one_by_one.files, in_runs.files, strict=True):
        assert bytes(a.file.mmap) == bytes(b.file.mmap)


def test_dispatching_read_back_records_in_runs_matches_one_at_a_time(stores: StoreFactory) -> None:
    """Recovery, reput and slaves dispatch runs of interleaved queues; the ConsumeQueues and
    index come out as when each record is dispatched alone, across queue files too."""
    requests = [
        DispatchRequest(
            "T" if i % 5 else "U",
            i % 3,
            100 * i,
            90,
            i % 7,
            1_700_000_000_000 + 300 * i,
            0,
            f"k{i}",
            f"U{i}",
            0,
            {},
        )
        for i in range(600)
    ]
    next_offset: dict[tuple[str, int], int] = {}
    for i, request in enumerate(requests):
        key = (request.topic, request.queue_id)
        requests[i] = request._replace(consume_queue_offset=next_offset.get(key, 0))
        next_offset[key] = next_offset.get(key, 0) + 1
    alone = StoreFactory(stores.root / "alone").open()
    for request in requests:
        alone.dispatcher.dispatch(request, notify=False)
    in_runs = stores.open()
    for start in range(0, len(requests), 70):
        in_runs.dispatcher.dispatch_many(requests[start : start + 70], notify=False)
    for (topic, queue_id), count in next_offset.items():
        queues = [s.find_consume_queue(topic, queue_id) for s in (alone, in_runs)]
        assert topic == "U" or len(queues[1].queue.files) > 1  # T's 160 units: three files
        assert [queues[0].unit(q) for q in range(count)] == [
            queues[1].unit(q) for q in range(count)
        ]
    assert [bytes(f.file.mmap) for f in alone.index_service.files] == [
        bytes(f.file.mmap) for f in in_runs.index_service.files
    ]


def test_packed_units_move_the_queues_end_to_their_last_record(tmp_path) -> None:
    """``put_units`` of a run, then of a lone unit, moves the queue's end (what a slave's
    truncation reads) to its last unit's record; a re-dispatch of those units adds nothing,
    and the next record's unit follows."""
    from broker.store.consume_queue import ConsumeQueue

    queue = ConsumeQueue("T", 0, tmp_path, 20 * CQ_UNIT.size)
    queue.queue.load()
    units = [(1000 * n, 100 + n, n) for n in range(5)]
    queue.put(*units[0], 0)  # the file made; then the packed units' copy into it
    queue.put_units(b"".join(CQ_UNIT.pack(*u) for u in units[1:4]), 1)
    assert queue.max_phys_offset == 3103
    queue.put_units(CQ_UNIT.pack(*units[4]), 4)
    assert queue.max_phys_offset == 4104
    for offset, unit in enumerate(units):  # reput going over what the puts dispatched
        queue.put(*unit, offset)
    queue.put(5000, 50, 7, 5)
    written = bytes(queue.queue.files[0].mmap[: 7 * CQ_UNIT.size])
    assert [CQ_UNIT.unpack_from(written, n * CQ_UNIT.size) for n in range(7)] == [
        *units,
        (5000, 50, 7),
        (0, 0, 0),
    ]
