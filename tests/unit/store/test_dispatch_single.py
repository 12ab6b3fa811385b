"""The native dispatch_single (a single message's ConsumeQueue unit and index entries, where
the queue's last file and the index file already are) against its pure-Python reference:
same bytes, same state moved on, the same parts left to the general code."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from broker.store import dispatch as twins
from broker.store.consume_queue import ConsumeQueue
from broker.store.index_file import HEADER, IndexFile, index_file_size, read_header
from broker.store.types import DispatchRequest
from remoting.speedups import native
from tests.nativekit import needs_native

pytestmark = needs_native

SLOTS, ENTRIES, CQ_FILE = 8, 12, 20 * 4


def _queue(files: int, wrote: int, max_phys: int) -> ConsumeQueue:
    """A ConsumeQueue whose last of ``files`` 4-unit files (bytearrays) has ``wrote`` bytes."""
    segments = [
        SimpleNamespace(
            mmap=bytearray(CQ_FILE), wrote_position=CQ_FILE, file_size=CQ_FILE, start_offset=i
        )
        for i in range(0, files * CQ_FILE, CQ_FILE)
    ]
    if segments:
        segments[-1].wrote_position = wrote
    queue = ConsumeQueue("T", 1, Path("unused"), CQ_FILE)  # no file is opened or created
    queue.queue.files = segments  # type: ignore[assignment]
    queue.max_phys_offset = max_phys
    return queue


def _index(count: int, end_phy: int) -> IndexFile:
    """An IndexFile over a bytearray whose next entry number is ``count``, having indexed up
    to ``end_phy``."""
    mm = bytearray(index_file_size(SLOTS, ENTRIES))
    HEADER.pack_into(mm, 0, 1_700_000_000_000, 1_700_000_000_000, 0, end_phy, 0, count)
    index = object.__new__(IndexFile)  # its mapping, not a file: what dispatch reads of it
    index.file = SimpleNamespace(mmap=mm)  # type: ignore[assignment]
    index.slots, index.max_entries = SLOTS, ENTRIES
    return index


def _state(queue: ConsumeQueue | None, index: IndexFile | None) -> tuple:
    units = (
        None if queue is None else [(bytes(f.mmap), f.wrote_position) for f in queue.queue.files]
    )
    return (
        units,
        None if queue is None else queue.max_phys_offset,
        None if index is None else bytes(index.file.mmap),
    )


@given(
    files=st.integers(0, 2),
    wrote=st.sampled_from([0, 20, 60, 80]),
    max_phys=st.sampled_from([0, 1000, 1100, 5000]),
    queue_offset=st.integers(0, 9),
    count=st.integers(0, ENTRIES + 1),
    end_phy=st.sampled_from([0, 999, 1000, 4000]),
    keys=st.lists(st.sampled_from(["", "k", "é", "😀"]), max_size=70).map(" ".join),
    uniq=st.sampled_from(["", "U1"]),
    sys_flag=st.sampled_from([0, 0x4, 0x8, 0xC]),
    with_queue=st.booleans(),
    with_index=st.booleans(),
)
def test_dispatch_single_alike(
    files, wrote, max_phys, queue_offset, count, end_phy, keys, uniq, sys_flag, with_queue,
    with_index,
) -> None:  # fmt: skip
    request = DispatchRequest(
        "T", 1, 1000, 100, -7, 1_700_000_005_000, queue_offset, keys, uniq, sys_flag, {}
    )
    outcomes, states = [], []
    for dispatch_single in (native.dispatch_single, twins.python_dispatch_single):
        queue = _queue(files, wrote, max_phys) if with_queue else None
        index = _index(count, end_phy) if with_index else None
        outcomes.append(dispatch_single(queue, index, request))
        states.append(_state(queue, index))
    assert outcomes[0] == outcomes[1]
    assert states[0] == states[1]


def test_a_unit_that_follows_the_queue_goes_in_and_moves_it_on() -> None:
    for dispatch_single in (native.dispatch_single, twins.python_dispatch_single):
        queue = _queue(1, 40, 900)  # units 0 and 1 are in
        request = DispatchRequest("T", 1, 1000, 100, -7, 1, 2, "", "", 0, {})
        assert dispatch_single(queue, None, request) == twins.UNIT_DONE
        last = queue.queue.files[-1]
        assert last.wrote_position == 60 and queue.max_phys_offset == 1100
        assert last.mmap[40:60] == (1000).to_bytes(8, "big") + (100).to_bytes(4, "big") + (
            -7
        ).to_bytes(8, "big", signed=True)


def test_what_does_not_fit_is_left_to_the_general_code() -> None:
    """A full last queue file, a unit out of order, an index file without room for every
    key: nothing written, so the general code (new files, warnings) does all of it."""
    request = DispatchRequest("T", 1, 1000, 100, 0, 1, 4, "a b", "U", 0, {})
    for dispatch_single in (native.dispatch_single, twins.python_dispatch_single):
        full, gap, crowded = _queue(1, 80, 0), _queue(1, 20, 0), _index(ENTRIES - 2, 0)
        assert dispatch_single(full, crowded, request) == 0
        assert dispatch_single(gap, None, request) == 0
        assert (
            full.queue.files[-1].wrote_position == 80 and gap.queue.files[-1].wrote_position == 20
        )
        assert read_header(crowded.file.mmap).index_count == ENTRIES - 2


def test_keys_go_into_the_index_uniq_key_first() -> None:
    for dispatch_single in (native.dispatch_single, twins.python_dispatch_single):
        index = _index(1, 0)
        request = DispatchRequest("T", 1, 1000, 100, 0, 1_700_000_005_000, 0, "a  b", "U", 0, {})
        assert dispatch_single(None, index, request) == twins.INDEX_DONE
        header = read_header(index.file.mmap)
        assert header.index_count == 4 and header.end_phy_offset == 1000  # U, a, b
