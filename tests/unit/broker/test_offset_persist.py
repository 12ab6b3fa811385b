"""consumerOffset.json written by the periodic persist (encoded in a worker thread on a copy of
the table) is what the synchronous shutdown write produces, and loads back to the same table."""

from __future__ import annotations

import trio
import trio.testing

from broker.offsets import ConsumerOffsetManager
from broker.persist import JsonConfigFile


def manager(path) -> ConsumerOffsetManager:
    offsets = ConsumerOffsetManager(JsonConfigFile(path))
    for group in range(20):
        for topic in range(10):
            for queue in range(8):
                offsets.commit(f"G{group}", f"T{topic}", queue, group * 1000 + topic * 10 + queue)
    return offsets


async def test_the_periodic_write_equals_the_shutdown_write(tmp_path) -> None:
    periodic, shutdown = manager(tmp_path / "a.json"), manager(tmp_path / "b.json")
    await periodic.persist()
    shutdown.persist_sync()
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    loaded = ConsumerOffsetManager(JsonConfigFile(tmp_path / "a.json"))
    loaded.load()
    assert loaded.table == periodic.table and loaded.query("G3", "T4", 5) == 3045


async def test_commits_during_a_write_are_kept_for_the_next_one(tmp_path) -> None:
    offsets = manager(tmp_path / "offsets.json")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(offsets.persist)
        await trio.testing.wait_all_tasks_blocked()  # the write is in its worker thread
        offsets.commit("G0", "T0", 0, 999_999)  # after the copy it encodes was taken
    written = ConsumerOffsetManager(JsonConfigFile(tmp_path / "offsets.json"))
    written.load()
    assert written.query("G0", "T0", 0) == 0
    await offsets.persist()
    written.load()
    assert written.query("G0", "T0", 0) == 999_999
