"""A record whose topic cannot be a directory (from a rogue master, or a log another broker
wrote) gets no ConsumeQueue, and nothing is created outside the store."""

from __future__ import annotations

import pytest

from broker.store.consume_queue_table import safe_directory_name
from tests.unit.store.conftest import crash, message


@pytest.mark.parametrize("topic", ["", ".", "..", "../x", "a/b", "/abs", "nul\0", "x" * 256])
def test_names_that_are_not_one_directory_are_refused(topic) -> None:
    assert not safe_directory_name(topic)


@pytest.mark.parametrize("topic", ["T", "%RETRY%g", "broker.a", "x" * 255, "rmq_sys_TRACE"])
def test_names_that_are_one_directory_pass(topic) -> None:
    assert safe_directory_name(topic)


def test_a_stored_record_with_a_traversal_topic_creates_nothing_outside_the_store(
    stores, tmp_path
) -> None:
    store = stores.open()
    outside = tmp_path / "escape"
    for topic in ("../../escape", "ok"):
        result = store.put_message(message(topic=topic))
        assert result.ok
    assert not outside.exists()
    assert store.find_consume_queue("ok", 0) is not None
    assert store.find_consume_queue("../../escape", 0) is None
    crash(store)

    again = stores.open()  # recovery dispatches the log again
    assert not outside.exists()
    assert sorted(p.name for p in (tmp_path / "store" / "consumequeue").iterdir()) == ["ok"]
    assert again.find_consume_queue("ok", 0).max_queue_offset == 1
