"""zero_ahead, the warmer's writes of zeros ahead of the CommitLog's writer: whole pages past
the writer's page only, the C (broker/store/native/pages.c) and its twin alike, a failing disk
turning it off without stopping the warm, and a store warmed this way reading, appending and
recovering as before."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.store import warm
from broker.store.mapped_file import OS_PAGE_SIZE as PAGE
from broker.store.mapped_file import MappedFile
from broker.store.store_native import native
from broker.store.warm import PageWarmer, python_zero_ahead, zero_ahead
from remoting import message as codec
from tests.kits.nativekit import needs_store_native
from tests.unit.store.conftest import StoreFactory, crash, message

PAGES = 24


def segment(directory: Path, name: int = 0) -> MappedFile:
    return MappedFile(directory / f"{name:020d}", PAGES * PAGE, create=True)


def fill(mapped: MappedFile, wrote: int) -> bytes:
    """What a segment holds with ``wrote`` bytes appended: data, then zeros."""
    data = bytes((i * 7 + 3) % 251 or 1 for i in range(wrote))
    mapped.mmap[:wrote] = data
    mapped.wrote_position = wrote
    return data + bytes(mapped.file_size - wrote)


def test_only_the_whole_pages_past_the_writer_are_counted(tmp_path: Path) -> None:
    mapped = segment(tmp_path)
    expected = fill(mapped, 3 * PAGE + 5)
    assert zero_ahead(mapped, 0, mapped.file_size) == (PAGES - 4) * PAGE
    assert zero_ahead(mapped, 6 * PAGE + 1, 3 * PAGE) == 2 * PAGE  # partial pages left out
    assert zero_ahead(mapped, 0, 4 * PAGE) == 0  # the writer's page is the writer's
    assert mapped.mmap[:] == expected
    mapped.close()
    assert zero_ahead(mapped, 0, PAGES * PAGE) == 0  # closed: nothing is written
    assert (tmp_path / f"{0:020d}").read_bytes() == expected


def test_a_range_outside_the_segment_is_refused(tmp_path: Path) -> None:
    mapped = segment(tmp_path)
    for start, length in ((-1, PAGE), (0, PAGES * PAGE + 1), (PAGES * PAGE + 1, 0), (0, -1)):
        with pytest.raises(ValueError):
            zero_ahead(mapped, start, length)
        with pytest.raises(ValueError):
            python_zero_ahead(mapped, start, length)
    mapped.close()


@needs_store_native
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    wrote=st.integers(0, PAGES * PAGE),
    start=st.integers(0, PAGES * PAGE),
    length=st.integers(0, PAGES * PAGE),
)
def test_the_c_and_its_twin_count_the_same_bytes_and_leave_the_same_file(
    tmp_path_factory: pytest.TempPathFactory, wrote: int, start: int, length: int
) -> None:
    length = min(length, PAGES * PAGE - start)
    directory = tmp_path_factory.mktemp("zero")
    mapped = segment(directory)
    expected = fill(mapped, wrote)
    assert native.zero_ahead(mapped, start, length) == python_zero_ahead(mapped, start, length)
    assert mapped.mmap[:] == expected
    mapped.close()


@needs_store_native
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(wrote=st.integers(0, PAGES * PAGE), start=st.integers(0, PAGES * PAGE))
def test_no_byte_below_the_end_of_the_writers_page_is_ever_written(
    tmp_path_factory: pytest.TempPathFactory, wrote: int, start: int
) -> None:
    """The safety of writing zeros ahead: even over bytes that are not zeros (which a segment
    never holds past its writer), only whole pages past the writer's page change."""
    mapped = segment(tmp_path_factory.mktemp("zero"))
    pattern = bytes(range(1, 256)) * (PAGES * PAGE // 255 + 1)
    mapped.mmap[:] = pattern[: PAGES * PAGE]
    mapped.wrote_position = wrote
    written = native.zero_ahead(mapped, start, PAGES * PAGE - start)
    kept = max(wrote + -wrote % PAGE, start + -start % PAGE)
    assert mapped.mmap[:kept] == pattern[:kept]
    assert mapped.mmap[kept:] == bytes(written)
    mapped.close()


def test_a_failing_write_of_zeros_turns_it_off_and_the_warm_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full(mapped: MappedFile, start: int, length: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(warm, "zero_ahead", full)
    mapped = segment(tmp_path)
    warmer = PageWarmer(ahead=4 * PAGE, chunk=2 * PAGE)
    warmer._mapped = mapped
    with caplog.at_level(logging.WARNING, logger="broker.store.warm"):
        warmer._warm(mapped)
    assert mapped.warmed_position == 8 * PAGE  # populated all the same
    assert not warmer.zeroing and warmer.bytes_zeroed == 0
    assert len(caplog.records) == 1  # once, not per chunk
    mapped.close()


def test_a_warmed_segment_appends_reads_and_recovers_as_before(stores: StoreFactory) -> None:
    store = stores.open(mapped_file_size_commit_log=4 << 20)
    warmer = store.commit_log.warmer
    warmer.ahead, warmer.chunk = 1 << 20, 256 << 10
    bodies = [bytes([65 + i % 26]) * (900 + i % 200) for i in range(3000)]  # ~3 MiB: 1 segment
    for body in bodies[:10]:
        store.put_message(message(body=body))
    active = store.commit_log.queue.last
    assert warmer.wait_warmed(active, 2 << 20, timeout_s=10)
    if native is not None and warmer.enabled:
        assert warmer.bytes_zeroed > 0  # the range ahead went through zero_ahead
    for body in bodies[10:]:
        store.put_message(message(body=body))
    wrote = active.wrote_position
    assert active.mmap[wrote : active.file_size] == bytes(active.file_size - wrote)
    crash(store)
    recovered = stores.open(mapped_file_size_commit_log=4 << 20)
    assert recovered.recovery_report.mode == "abnormal"
    assert recovered.commit_log.max_phys_offset == wrote
    found = recovered.get_message("G", "T", 0, 0, 32)
    assert [codec.decode_message(b).body for b in found.buffers] == bodies[:32]
    tail = recovered.get_message("G", "T", 0, 2990, 32)
    assert [codec.decode_message(b).body for b in tail.buffers] == bodies[2990:]
