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

The appender only compares two ints (``mapped.warmed_position``) and sets an event when the
warm edge comes near; the thread does the rest, with the GIL released during the madvise when
broker.store._native is built. Kernels without the advice: the warmer stops itself and appends
fault pages in as before.
"""

from __future__ import annotations

import logging
import mmap
import sys
import threading

from broker.store.mapped_file import OS_PAGE_SIZE, MappedFile
from broker.store.slotted import Slotted
from broker.store.store_native import native

log = logging.getLogger(__name__)

MADV_POPULATE_WRITE = 23


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

    def wrote(self, mapped: MappedFile) -> None:
        """The writer moved ``mapped``'s write position: warm further when it comes within
        ``ahead`` bytes of the warm edge (one comparison on the append path otherwise).
        While the thread is at work on this segment it is not asked again: it goes on to
        ``2 * ahead`` past the writer, and every put until then would set the event (a lock
        round trip, 5% of a single put when the thread waited for the GIL between chunks).
        Nor once the segment is warm to its end: the writer's last ``ahead`` bytes of it would
        otherwise wake the thread on every put to find nothing to do (a futex wake, a context
        switch and a GIL hand-over per put; half of every put with 64 MiB segments)."""
        if (
            mapped.wrote_position + self.ahead > mapped.warmed_position
            and mapped.warmed_position < mapped.file_size
            and (not self._busy or mapped is not self._mapped)
        ):
            self.request(mapped)

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
