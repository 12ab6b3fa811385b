"""PageWarmer: CommitLog pages are faulted in ahead of the writer without changing a byte."""

from __future__ import annotations

from pathlib import Path

from broker.store.mapped_file import OS_PAGE_SIZE, MappedFile
from broker.store.warm import PageWarmer, populate_write
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
