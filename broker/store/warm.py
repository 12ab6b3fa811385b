"""PageWarmer: the CommitLog's pages are faulted in ahead of the write position, off the
append path.

The first write to each page of a shared file mapping costs a page fault: ~14 us a page on this
kind of machine, ~3 us per 1 KiB message, more than packing the record. Asked in bulk with
MADV_POPULATE_WRITE (Linux 5.14+) the same pages cost ~1 us each and no byte changes, so a
thread of the store's own keeps the next ``ahead`` bytes of the active segment mapped. It is
RocketMQ's warmMapedFileEnable done incrementally: tens of MiB in front of the writer instead
of the whole 1 GiB segment at creation, so resident memory grows only as the log does.

The thread takes the GIL back between madvise calls, which a busy appender hands over only
every switch interval (5 ms): each call covers ``chunk`` bytes so the warm edge still outruns
batch appends (~400 MB/s here). With 1 MiB calls and 8 MiB ahead, batch appends caught up with
the edge and faulted pages in themselves: perf put 40% of the appender's time in the kernel
zeroing pages, against 0-22% with these defaults (more when the VM's memory is cold).

On a new page the madvise also chooses how the page cache gets it: through readahead, in
folios of up to 2 MiB. On a VM whose balloon reports free memory to its host those come from the
large free blocks the host has taken back, and zeroing each page faults on the host (5-10 us a
page). A write of zeros in 256 KiB pieces (``write_zeros``) takes folios of at most that size,
which come first from the fragments of free memory too small to be reported, still backed:
bench/bench_page_cost.py gave 1.2-1.7 us a page against 5.3-7.3 while such fragments last, and
the same as the madvise once they are used up; recycled pages cost the same either way.

A write of zeros must never land on a record, and the appender writes through the mapping
without a lock, so only a segment the appender cannot have yet is written so: the next one,
made ready by the allocation service (``offer``), before it is handed out (``take`` waits for
the write in progress). It is written as the warm edge reaches into it, ``2 * ahead`` past the
writer as within a segment, so zeros are dirty no further ahead than the madvise's pages are (a
slow writer would find them written back, write-protected, and fault on them). The active
segment is only populated. So segments of up to ``2 * ahead`` (64 MiB) get the writes of zeros
on all but the first, larger ones on their first ``2 * ahead`` bytes (1/16 of the default 1 GiB).

The appender only compares two ints (``mapped.warmed_position``) and sets an event when the
warm edge comes near; the thread does the rest, with the GIL released during the madvise when
broker.store._native is built. Kernels without the advice: the warmer stops itself and appends
fault pages in as before.
"""

from __future__ import annotations

import logging
import mmap
import os
import sys
import threading

from broker.store.mapped_file import OS_PAGE_SIZE, MappedFile
from broker.store.slotted import Slotted
from broker.store.store_native import native

log = logging.getLogger(__name__)

MADV_POPULATE_WRITE = 23
# The size of each write of zeros: the page cache takes folios of at most this size for it.
ZERO_PIECE = 256 << 10
_ZEROS = memoryview(bytes(ZERO_PIECE))
# How much is written with the handover lock held: what ``take`` waits for at most (a few ms
# on cold memory) when the appender rolls onto the segment.
ZERO_STEP = 1 << 20


def populate_write(mapped: MappedFile, start: int, length: int) -> bool:
    """Fault in [start, start + length) for writing; False if the kernel lacks the advice."""
    if native is not None:
        return native.populate_write(mapped.mmap, start, length)
    aligned = start - start % OS_PAGE_SIZE
    try:  # holds the GIL throughout, but still far cheaper than faulting page by page
        mapped.mmap.madvise(MADV_POPULATE_WRITE, aligned, length + start - aligned)
    except OSError as exc:
        if exc.errno == 22:  # EINVAL: advice unknown to this kernel
            return False
        raise
    return True


def write_zeros(fd: int, start: int, end: int) -> int:
    """pwrite zeros over ``[start, end)`` of ``fd`` in ZERO_PIECE writes (the GIL released);
    the number of bytes written. Raises OSError (ENOSPC, EIO)."""
    position = start
    while position < end:
        done = os.pwrite(fd, _ZEROS[: min(ZERO_PIECE, end - position)], position)
        if done <= 0:
            break
        position += done
    return position - start


def next_warm_range(
    wrote: int, warmed: int, file_size: int, ahead: int, chunk: int
) -> tuple[int, int] | None:
    """The next range to populate, (start, length), or None when the warm edge is far enough
    ahead: from the warm edge (or the writer's page, if the writer overtook it) toward
    ``2 * ahead`` past the writer, whole pages, at most ``chunk`` bytes, never past the segment.
    Pure: sizes in, a range out (the thread calls it between madvise calls)."""
    start = max(warmed, wrote - wrote % OS_PAGE_SIZE)
    goal = wrote + 2 * ahead
    goal = min(file_size, goal + -goal % OS_PAGE_SIZE)
    if start >= goal:
        return None
    return start, min(chunk, goal - start)


class PageWarmer(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("ahead",)

    def __init__(self, ahead: int = 32 << 20, chunk: int = 4 << 20) -> None:
        self.ahead, self.chunk = ahead, chunk
        # The advice number is Linux's; elsewhere pages fault in on append as before.
        self.enabled = sys.platform == "linux" and hasattr(mmap.mmap, "madvise")
        self._wanted = threading.Event()
        self._progress = threading.Condition()
        self._mapped: MappedFile | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None
        # Asked and not yet done; cleared by the thread after it stops warming, so a request
        # between its last check and the clear is only taken up on the writer's next put.
        self._busy = False
        self.pages_warmed = 0
        # The next segment, ready and not yet the appender's: only it is written with zeros.
        # The lock is held across each write of zeros and by ``take``, which hands it over.
        self._next: MappedFile | None = None
        self._taken = -1  # the highest start offset handed to the appender (``take``)
        self._handover = threading.Lock()
        # Off after a write of zeros failed (a full or failing disk: the store's own writes
        # report that): pages are then populated only, as before.
        self.zeroing = True
        self.bytes_zeroed = 0

    def wrote(self, mapped: MappedFile) -> None:
        """The writer moved ``mapped``'s write position: warm further when it comes within
        ``ahead`` bytes of the warm edge (one comparison on the append path otherwise).
        While the thread is at work on this segment it is not asked again: it goes on to
        ``2 * ahead`` past the writer, and every put until then would set the event (a lock
        round trip, 5% of a single put when the thread waited for the GIL between chunks).
        Nor once the segment is warm to its end: the writer's last ``ahead`` bytes of it would
        otherwise wake the thread on every put to find nothing to do (a futex wake, a context
        switch and a GIL hand-over per put; half of every put with 64 MiB segments), unless
        the next segment, ready and not the appender's yet, is warm to less than ``ahead``
        past the writer."""
        if mapped.wrote_position + self.ahead <= mapped.warmed_position or (
            self._busy and mapped is self._mapped
        ):
            return
        if mapped.warmed_position < mapped.file_size:
            self.request(mapped)
            return
        # The next segment's edge within ``ahead`` of the writer (then the thread takes it to
        # next_goal, ``2 * ahead`` past it, as within a segment): asked against next_goal
        # itself, every put of the last stretch woke the thread for its own few pages.
        following = self._next
        if following is not None and following.warmed_position < min(
            following.file_size, mapped.wrote_position + self.ahead - mapped.file_size
        ):
            self.request(mapped)

    def next_goal(self, mapped: MappedFile, following: MappedFile) -> int:
        """How far into ``following`` the warm edge goes with ``mapped``'s writer where it is:
        ``2 * ahead`` past the writer, as within a segment, in whole pages; so the zeros are
        dirty no further ahead of the writer than the madvise's pages were."""
        goal = mapped.wrote_position + 2 * self.ahead - mapped.file_size
        return max(0, min(following.file_size, goal + -goal % OS_PAGE_SIZE))

    def request(self, mapped: MappedFile) -> None:
        """Warm ``mapped`` ahead of its writer, in the warmer's thread."""
        if not self.enabled:
            return
        self._mapped = mapped
        self._busy = True
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="page-warmer", daemon=True)
            self._thread.start()
        self._wanted.set()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stopping:
                return
            mapped = self._mapped
            if mapped is not None:
                try:
                    self._warm(mapped)
                except (OSError, ValueError, TypeError) as exc:  # the segment was unmapped
                    log.debug("warming %s stopped: %s", mapped.path.name, exc)
            self._busy = False

    def _warm(self, mapped: MappedFile) -> None:
        while not self._stopping and mapped is self._mapped:
            planned = next_warm_range(
                mapped.wrote_position,
                mapped.warmed_position,
                mapped.file_size,
                self.ahead,
                self.chunk,
            )
            if planned is None:
                following = self._next
                if (
                    following is not None
                    and mapped.warmed_position >= mapped.file_size
                    and following.start_offset == mapped.end_offset
                ):
                    self._warm_next(mapped, following)
                return
            start, length = planned
            if not populate_write(mapped, start, length):
                log.info("MADV_POPULATE_WRITE unsupported by this kernel: pages fault on append")
                self.enabled = False
                return
            with self._progress:
                mapped.warmed_position = start + length
                self.pages_warmed += length // OS_PAGE_SIZE
                self._progress.notify_all()

    def offer(self, mapped: MappedFile) -> None:
        """``mapped`` is the next segment, created and not yet handed to the appender (called
        by the allocation service, from its worker thread): warm its start when the active
        segment is warm to its end. Refused for a segment at or below one already taken: the
        appender may have created that file itself, while this one was being created."""
        with self._handover:
            if mapped.start_offset <= self._taken:
                return
            self._next = mapped
        if self._mapped is not None:
            self.request(self._mapped)

    def take(self, start_offset: int) -> None:
        """The segment starting at ``start_offset`` goes to the appender (the one made ready or
        one it creates itself), or is closed: no zeros are written into it, or into any
        segment offered for it or below it, from now on. Waits for a write of zeros in
        progress (one ZERO_STEP at most)."""
        with self._handover:
            self._taken = max(self._taken, start_offset)
            if self._next is not None and self._next.start_offset <= self._taken:
                self._next = None

    def _warm_next(self, active: MappedFile, mapped: MappedFile) -> None:
        """Zeros, then the populate, over the next segment up to ``next_goal`` while it is
        still not the appender's."""
        while not self._stopping and mapped.warmed_position < self.next_goal(active, mapped):
            start = mapped.warmed_position
            end = min(self.next_goal(active, mapped), start + self.chunk)
            if self.zeroing:
                for step in range(start, end, ZERO_STEP):
                    if not self._zero_step(mapped, step, min(end, step + ZERO_STEP)):
                        return  # taken: the active segment's warm carries on from start
            if not populate_write(mapped, start, end - start):
                self.enabled = False
                return
            with self._progress:
                mapped.warmed_position = end
                self.pages_warmed += (end - start) // OS_PAGE_SIZE
                self._progress.notify_all()

    def _zero_step(self, mapped: MappedFile, start: int, end: int) -> bool:
        """Zeros over ``[start, end)`` of ``mapped`` if it is still not the appender's."""
        with self._handover:
            if self._next is not mapped or mapped._fd < 0:
                return False
            if not self.zeroing:  # failed at an earlier step of this chunk
                return True
            try:
                self.bytes_zeroed += write_zeros(mapped._fd, start, end)
            except OSError as exc:
                self.zeroing = False
                log.warning(
                    "writing zeros into the next CommitLog segment failed, its pages are only"
                    " populated from now on: %s: %s",
                    mapped.path.name,
                    exc,
                )
        return True

    def wait_warmed(self, mapped: MappedFile, position: int, timeout_s: float) -> bool:
        """Block until ``mapped`` is warm up to ``position`` (for tests and benchmarks)."""
        with self._progress:
            return self._progress.wait_for(lambda: mapped.warmed_position >= position, timeout_s)

    def close(self) -> None:
        self._stopping = True
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
