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


async def test_a_persist_copies_only_the_entries_changed_since_the_last(tmp_path) -> None:
    offsets = manager(tmp_path / "offsets.json")
    first = await offsets._copy_changed()
    assert first == offsets.table and first["T1@G1"] is not offsets.table["T1@G1"]
    offsets.commit("G1", "T2", 0, 5)
    offsets.replace("T9@Slave", {0: 7})
    offsets.clone("G1", "Copy", "T3")
    offsets.remove_group("G2")
    offsets.remove_topics({"T4"})
    second = await offsets._copy_changed()
    assert second == offsets.table
    assert second["T1@G1"] is first["T1@G1"]  # unchanged: shared, not copied again
    assert second["T2@G1"] is not first["T2@G1"] and second["T2@G1"][0] == 5
    assert first["T2@G1"][0] == 1020  # the copy a worker thread may be encoding never moves
    assert "T1@G2" in first and "T1@G2" not in second and "T4@G0" not in second


async def test_the_copy_gives_the_loop_back_and_a_cancelled_one_is_redone(tmp_path) -> None:
    offsets = manager(tmp_path / "offsets.json")
    for n in range(3 * 1024):
        offsets.commit("Many", f"X{n}", 0, n)
    ran = 0

    async def other() -> None:
        nonlocal ran
        while True:
            ran += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        await trio.lowlevel.checkpoint()
        before = ran
        await offsets._copy_changed()
        assert ran - before >= 2  # 4,600 changed entries: other work ran between slices
        offsets.commit("Many", "X0", 0, -5)
        with trio.CancelScope() as scope:
            scope.cancel()
            await offsets._copy_changed()
        nursery.cancel_scope.cancel()
    assert (await offsets._copy_changed())["X0@Many"] == {0: -5}


async def test_two_persists_at_once_lose_no_change(tmp_path) -> None:
    offsets = manager(tmp_path / "offsets.json")
    await offsets.persist()
    for n in range(2 * 1024):  # enough for the copy to give the loop back in the middle
        offsets.commit("A", f"X{n}", 0, n)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(offsets.persist)
        await trio.lowlevel.checkpoint()
        offsets.commit("B", "Y", 0, 7)
        nursery.start_soon(offsets.persist)
    await offsets.persist()  # from the base the two left behind
    written = ConsumerOffsetManager(JsonConfigFile(tmp_path / "offsets.json"))
    written.load()
    assert written.table == offsets.table
