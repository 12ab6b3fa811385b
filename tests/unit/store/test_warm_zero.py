"""The page warmer's writes of zeros (broker/store/warm.py): only into the next CommitLog
segment while it is not the appender's, its first ``2 * ahead`` bytes once the active segment
is warm to its end, never after it was handed over; a failing disk turns them off without
stopping the warm; a store warmed this way appends, reads and recovers as before."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from broker.store import warm
from broker.store.allocate import AllocateMappedFileService
from broker.store.mapped_file import OS_PAGE_SIZE as PAGE
from broker.store.mapped_file import MappedFile, segment_name
from broker.store.warm import PageWarmer, write_zeros
from remoting import message as codec
from tests.unit.store.conftest import StoreFactory, crash, message

PAGES = 64


def segment(directory: Path, index: int = 0) -> MappedFile:
    return MappedFile(directory / segment_name(index * PAGES * PAGE), PAGES * PAGE, create=True)


def pattern(size: int) -> bytes:
    return bytes((i * 7 + 3) % 251 or 1 for i in range(size))


def warm_to_end(warmer: PageWarmer, active: MappedFile) -> None:
    warmer._mapped = active
    active.wrote_position = active.file_size - PAGE
    warmer._warm(active)
    assert active.warmed_position == active.file_size


def test_zeros_cover_the_range_and_nothing_else(tmp_path: Path) -> None:
    mapped = segment(tmp_path)
    data = pattern(PAGES * PAGE)
    mapped.mmap[:] = data
    assert write_zeros(mapped._fd, 3 * PAGE, 40 * PAGE + 5) == 37 * PAGE + 5
    assert mapped.mmap[: 3 * PAGE] == data[: 3 * PAGE]
    assert mapped.mmap[3 * PAGE : 40 * PAGE + 5] == bytes(37 * PAGE + 5)
    assert mapped.mmap[40 * PAGE + 5 :] == data[40 * PAGE + 5 :]
    mapped.close()


def test_the_next_segment_is_written_once_the_active_one_is_warm_to_its_end(
    tmp_path: Path,
) -> None:
    active, following = segment(tmp_path), segment(tmp_path, 1)
    warmer = PageWarmer(ahead=8 * PAGE, chunk=4 * PAGE)
    warmer._next = following
    warmer._mapped = active
    active.wrote_position = 10 * PAGE  # far from the end: the next segment is left alone
    warmer._warm(active)
    assert active.warmed_position < active.file_size
    assert following.warmed_position == 0 and warmer.bytes_zeroed == 0
    warm_to_end(warmer, active)  # the writer one page from the end
    assert following.warmed_position == 15 * PAGE  # 2 * ahead past the writer
    assert warmer.bytes_zeroed == 15 * PAGE
    assert following.mmap[:] == bytes(PAGES * PAGE)
    active.close()
    following.close()


def test_a_segment_taken_by_the_appender_is_never_written_again(tmp_path: Path) -> None:
    active, following = segment(tmp_path), segment(tmp_path, 1)
    warmer = PageWarmer(ahead=8 * PAGE, chunk=4 * PAGE)
    warmer.offer(following)
    warmer.take(following.start_offset)  # the roll: the appender writes into it from now on
    records = pattern(20 * PAGE)
    following.mmap[: len(records)] = records
    warm_to_end(warmer, active)
    warmer._warm_next(active, following)  # a warmer that still held it from before the take
    assert following.mmap[: len(records)] == records
    assert warmer.bytes_zeroed == 0
    warmer.take(active.start_offset)  # a lower segment's take leaves nothing to do
    active.close()
    following.close()


def test_a_failing_write_of_zeros_turns_it_off_and_the_warm_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full(fd: int, start: int, end: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(warm, "write_zeros", full)
    monkeypatch.setattr(warm, "ZERO_STEP", PAGE)  # several steps in each chunk
    active, following = segment(tmp_path), segment(tmp_path, 1)
    warmer = PageWarmer(ahead=8 * PAGE, chunk=4 * PAGE)
    warmer._next = following
    with caplog.at_level(logging.WARNING, logger="broker.store.warm"):
        warm_to_end(warmer, active)
    assert following.warmed_position == 15 * PAGE  # populated all the same
    assert not warmer.zeroing and warmer.bytes_zeroed == 0
    assert len(caplog.records) == 1  # once, not per step or chunk
    active.close()
    following.close()


def test_a_store_appends_into_a_zeroed_segment_and_recovers_it(stores: StoreFactory) -> None:
    size = 4 << 20
    store = stores.open(mapped_file_size_commit_log=size)
    warmer = store.commit_log.warmer
    warmer.ahead, warmer.chunk = 1 << 20, 256 << 10
    bodies = [bytes([65 + i % 26]) * (900 + i % 200) for i in range(6000)]  # ~6 MiB: 2 segments
    count = 0
    active = None
    while active is None or active.wrote_position < size - (256 << 10):
        store.put_message(message(body=bodies[count]))
        active, count = store.commit_log.queue.last, count + 1
    assert warmer.wait_warmed(active, size, timeout_s=10)
    path = active.path.with_name(segment_name(size))
    store.allocation._create(path)  # the allocation service's worker: offered to the warmer
    following = store.allocation.ready[path.name]
    goal = warmer.next_goal(active, following)
    assert goal > 1 << 20  # the writer within 1 MiB of the end: 2 * ahead reaches past it
    if warmer.enabled:
        assert warmer.wait_warmed(following, goal, timeout_s=10)
        assert warmer.bytes_zeroed == goal
    for body in bodies[count:]:
        store.put_message(message(body=body))
    assert store.commit_log.queue.last is following  # handed over by the allocation service
    wrote = following.wrote_position
    assert wrote > goal  # past the zeroed start, into what was only populated
    crash(store)
    recovered = stores.open(mapped_file_size_commit_log=size)
    assert recovered.recovery_report.mode == "abnormal"
    assert recovered.commit_log.max_phys_offset == size + wrote
    for start in (0, count - 5, 5990):
        found = recovered.get_message("G", "T", 0, start, 10)
        got = [codec.decode_message(b).body for b in found.buffers]
        assert got == bodies[start : start + 10]


def test_the_writer_in_its_segments_last_stretch_asks_for_the_next_one(tmp_path: Path) -> None:
    """A segment warm to its end asks the thread for nothing, unless the next segment is warm
    to less than ``ahead`` past the writer: then the writer's puts keep its warm edge moving,
    and not for every few pages the writer moves on."""
    active, following = segment(tmp_path), segment(tmp_path, 1)
    warmer = PageWarmer(ahead=8 * PAGE, chunk=4 * PAGE)
    warm_to_end(warmer, active)
    asked: list[MappedFile] = []
    warmer.request = asked.append  # type: ignore[method-assign]
    active.wrote_position = PAGES * PAGE - 6 * PAGE
    warmer.wrote(active)
    assert asked == []  # no next segment
    warmer._next = following
    warmer.wrote(active)
    assert asked == [active]  # ahead reaches 2 pages into it, nothing warm there yet
    following.warmed_position = 10 * PAGE  # next_goal: 2 * ahead past the writer
    for _ in range(8):
        active.wrote_position += PAGE
        warmer.wrote(active)
    assert asked == [active]  # the writer is still more than ahead behind the edge
    active.wrote_position += PAGE
    warmer.wrote(active)
    assert asked == [active, active]
    active.close()
    following.close()


def test_a_segment_offered_after_the_appender_made_its_own_is_refused(tmp_path: Path) -> None:
    """The append path creates the next file itself when the allocation service is late; the
    service's own object for that file, offered after, must never be written."""
    active, following = segment(tmp_path), segment(tmp_path, 1)
    warmer = PageWarmer(ahead=8 * PAGE, chunk=4 * PAGE)
    warmer.take(following.start_offset)  # allocate() on a miss: the appender's own file
    warmer.offer(following)
    records = pattern(20 * PAGE)
    following.mmap[: len(records)] = records
    warm_to_end(warmer, active)
    assert following.mmap[: len(records)] == records
    assert warmer._next is None and warmer.bytes_zeroed == 0
    active.close()
    following.close()


def test_only_the_active_segments_successor_is_written(tmp_path: Path) -> None:
    active, beyond = segment(tmp_path), segment(tmp_path, 2)  # a gap: not the next one
    warmer = PageWarmer(ahead=8 * PAGE, chunk=4 * PAGE)
    warmer.offer(beyond)
    warm_to_end(warmer, active)
    assert warmer.bytes_zeroed == 0 and beyond.warmed_position == 0
    active.close()
    beyond.close()


def test_the_allocation_service_hands_over_before_the_appender_gets_a_segment(
    tmp_path: Path,
) -> None:
    service = AllocateMappedFileService(PAGES * PAGE)
    handed: list[int] = []
    offered: list[MappedFile] = []
    service.on_handover, service.on_ready = handed.append, offered.append
    first = service.allocate(tmp_path / segment_name(0), PAGES * PAGE)  # a miss: made here
    service._create(tmp_path / segment_name(PAGES * PAGE))
    second = service.allocate(tmp_path / segment_name(PAGES * PAGE), PAGES * PAGE)
    assert offered == [second] and handed == [0, PAGES * PAGE]
    service._create(tmp_path / segment_name(2 * PAGES * PAGE))
    service.close()
    assert handed == [0, PAGES * PAGE, 2 * PAGES * PAGE]
    first.close()
    second.close()
