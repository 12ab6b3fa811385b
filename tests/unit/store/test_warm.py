"""PageWarmer: CommitLog pages are faulted in ahead of the writer without changing a byte."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from broker.store.mapped_file import OS_PAGE_SIZE, MappedFile
from broker.store.warm import PageWarmer, populate_write
from tests.kits.nativekit import needs_store_native
from tests.unit.store.conftest import StoreFactory, message


def test_populating_pages_leaves_their_bytes_as_they_were(tmp_path: Path) -> None:
    mapped = MappedFile(tmp_path / f"{0:020d}", 64 * OS_PAGE_SIZE, create=True)
    pattern = bytes(range(256)) * (8 * OS_PAGE_SIZE // 256)
    mapped.mmap[: len(pattern)] = pattern
    assert populate_write(mapped, 100, 40 * OS_PAGE_SIZE)  # unaligned start: rounded down
    assert mapped.mmap[: len(pattern)] == pattern
    assert mapped.mmap[len(pattern) :] == bytes(56 * OS_PAGE_SIZE)
    mapped.close()
    assert (tmp_path / f"{0:020d}").read_bytes()[: len(pattern)] == pattern


def test_the_warm_edge_runs_ahead_of_the_writer_and_stops_at_the_segment_end(
    tmp_path: Path,
) -> None:
    mapped = MappedFile(tmp_path / f"{0:020d}", 256 * OS_PAGE_SIZE, create=True)
    warmer = PageWarmer(ahead=16 * OS_PAGE_SIZE, chunk=4 * OS_PAGE_SIZE)
    warmer._mapped = mapped
    mapped.wrote_position = 10 * OS_PAGE_SIZE + 7
    warmer._warm(mapped)
    assert mapped.warmed_position == (10 + 1 + 2 * 16) * OS_PAGE_SIZE  # whole pages
    mapped.wrote_position = 250 * OS_PAGE_SIZE  # the writer overtook it: skip to the writer
    warmer._warm(mapped)
    assert mapped.warmed_position == mapped.file_size
    mapped.close()


def test_a_store_warms_its_active_segment_while_appending(stores: StoreFactory) -> None:
    store = stores.open(mapped_file_size_commit_log=32 << 20)
    warmer = store.commit_log.warmer
    warmer.ahead, warmer.chunk = 4 << 20, 1 << 20  # the defaults would cover the whole segment
    store.put_message(message(body=b"x" * 1000))
    active = store.commit_log.queue.last
    assert warmer.wait_warmed(active, warmer.ahead, timeout_s=10)
    for _ in range(10_000):  # ~10 MiB: past the first warm edge
        store.put_message(message(body=b"y" * 1000))
    assert active.wrote_position > warmer.ahead
    assert warmer.wait_warmed(active, active.wrote_position + warmer.ahead, timeout_s=10)
    found = store.get_message("G", "T", 0, 9_990, 11)
    assert found.message_count == 11


@needs_store_native  # without it a flush is fdatasync of the whole segment, as before
@pytest.mark.skipif(not hasattr(resource, "RUSAGE_THREAD"), reason="needs Linux's RUSAGE_THREAD")
async def test_a_flush_leaves_the_warmed_pages_ahead_of_the_writer_warm(
    stores: StoreFactory,
) -> None:
    """A whole-segment fdatasync also wrote back the dirty zero pages the warmer had populated
    ahead of the writer, and write-protected them: each took a fault again when appended to."""
    store = stores.open(mapped_file_size_commit_log=32 << 20)
    warmer = store.commit_log.warmer
    warmer.ahead, warmer.chunk = 8 << 20, 1 << 20
    for _ in range(64):
        store.put_message(message(body=b"x" * 1000))
    active = store.commit_log.queue.last
    warmed = warmer.wait_warmed(active, 16 << 20, timeout_s=10)
    if not warmer.enabled:  # the kernel refused the advice; a slow warmer is a failure
        pytest.skip("this kernel lacks MADV_POPULATE_WRITE (Linux 5.14+): nothing is warmed")
    assert warmed, "the warmer did not reach 16 MiB ahead of the writer within 10 s"
    assert await store.flusher.flush_once(0)
    assert active.flushed_position == active.wrote_position
    ahead = range(1 << 20, 2 << 20, OS_PAGE_SIZE)  # past the ~70 KiB appended, warmed
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for position in ahead:
        active.mmap[position] = 0  # what it holds: never-written space stays zeros
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - faults
    assert faults < len(ahead) // 8, f"{faults} faults writing {len(ahead)} warmed pages"


def test_a_segment_warm_to_its_end_is_not_asked_again(tmp_path: Path) -> None:
    """Within ``ahead`` of a segment warmed to its end every put used to wake the thread (an
    event set per put) only for it to find nothing left to warm."""
    mapped = MappedFile(tmp_path / f"{0:020d}", 64 * OS_PAGE_SIZE, create=True)
    warmer = PageWarmer(ahead=16 * OS_PAGE_SIZE, chunk=64 * OS_PAGE_SIZE)
    warmer._mapped = mapped
    mapped.wrote_position = 40 * OS_PAGE_SIZE
    warmer._warm(mapped)
    assert mapped.warmed_position == mapped.file_size
    asked: list[MappedFile] = []
    warmer.request = asked.append  # type: ignore[method-assign]
    for step in range(8):  # the thread is idle: a put near the end must not wake it
        mapped.wrote_position = (50 + step) * OS_PAGE_SIZE  # within ahead of the end
        warmer.wrote(mapped)
    assert asked == []
    mapped.warmed_position = 60 * OS_PAGE_SIZE  # not yet at the end: asked as before
    warmer.wrote(mapped)
    assert asked == [mapped]
    mapped.close()
