"""What a new page of memory costs this machine: a CommitLog page warmed in a new file, and an
anonymous page (what an in-memory server such as Redis grows its heap with), each first on
cold memory and then again on memory just freed.

On a VM whose balloon driver reports free pages to the host (virtio-balloon free page
reporting; Firecracker's, here), a freed page goes back to the host a few seconds after it is
freed, and the next first touch of it makes the host fault a page in again. A broker started on
a machine that has much free memory writes its CommitLog into such cold pages, so its page
warmer's madvise (broker/store/warm.py) spends far more per page than on a machine whose page
cache recycles its own pages (every long-running broker's, once memory is full). The figures
below are the same machine's, in one run: cold first, then recycled.

Each way of warming a segment is measured on a new file allocated as the store allocates its
segments (posix_fallocate), in the warmer's 4 MiB calls, and is followed by one write to every
page through the mapping, as the appender does: the warm and that write are each given as thread
CPU per page (wall time too for the warm), so a way that leaves a fault to the appender shows it.

    python -m bench.bench_page_cost [--mib 128] [--settle 4] [--ways populate,willneed,...]
"""

from __future__ import annotations

import argparse
import mmap
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from broker.store.warm import MADV_POPULATE_WRITE

PAGE = 4096
CHUNK = 4 << 20
ZEROS = bytes(CHUNK)


def _populate(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    mapping.madvise(MADV_POPULATE_WRITE, start, length)


def _populate_pieces(piece: int) -> Callable[[mmap.mmap, int, int, int], None]:
    def warm(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
        for at in range(start, start + length, piece):
            mapping.madvise(MADV_POPULATE_WRITE, at, min(piece, start + length - at))

    return warm


def _pwrite(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    os.pwrite(fd, memoryview(ZEROS)[:length], start)


def _pwrite_populate(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    _pwrite(mapping, fd, start, length)
    _populate(mapping, fd, start, length)


def _willneed_populate(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    os.posix_fadvise(fd, start, length, os.POSIX_FADV_WILLNEED)
    _populate(mapping, fd, start, length)


def _random_populate(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    mapping.madvise(mmap.MADV_RANDOM, start, length)
    _populate(mapping, fd, start, length)
    mapping.madvise(mmap.MADV_NORMAL, start, length)


def _nohuge_populate(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    mapping.madvise(mmap.MADV_NOHUGEPAGE, start, length)
    _populate(mapping, fd, start, length)


def _pwrite_pieces(piece: int) -> Callable[[mmap.mmap, int, int, int], None]:
    def warm(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
        zeros = memoryview(ZEROS)[:piece]
        for at in range(start, start + length, piece):
            os.pwrite(fd, zeros, at)
        _populate(mapping, fd, start, length)

    return warm


def _huge_populate(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    mapping.madvise(mmap.MADV_HUGEPAGE, start, length)
    _populate(mapping, fd, start, length)


def _nothing(mapping: mmap.mmap, fd: int, start: int, length: int) -> None:
    pass


WAYS: dict[str, Callable[[mmap.mmap, int, int, int], None]] = {
    "populate": _populate,  # the warmer today
    "populate64k": _populate_pieces(64 << 10),
    "populate256k": _populate_pieces(256 << 10),
    "populate1m": _populate_pieces(1 << 20),
    "pwrite": _pwrite,
    "pwrite+populate": _pwrite_populate,
    "willneed+populate": _willneed_populate,
    "random+populate": _random_populate,
    "nohuge+populate": _nohuge_populate,
    "huge+populate": _huge_populate,
    "pwrite4k+populate": _pwrite_pieces(4096),
    "pwrite16k+populate": _pwrite_pieces(16384),
    "pwrite64k+populate": _pwrite_pieces(64 << 10),
    "pwrite128k+populate": _pwrite_pieces(128 << 10),
    "pwrite256k+populate": _pwrite_pieces(256 << 10),
    "none": _nothing,  # the appender faults every page in itself
}


def warm_file(directory: Path, size: int, way: Callable) -> tuple[float, float, float]:
    """Thread CPU µs per page to warm a new segment's pages, wall µs per page of the same, and
    thread CPU µs per page of the appender's first write to each page afterwards."""
    path = directory / "segment"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
        mapping = mmap.mmap(fd, size)
        wall, cpu = time.perf_counter(), time.thread_time()
        for start in range(0, size, CHUNK):
            way(mapping, fd, start, min(CHUNK, size - start))
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        touch = time.thread_time()
        for offset in range(0, size, PAGE):
            mapping[offset] = 0
        touch = time.thread_time() - touch
        mapping.close()
    finally:
        os.close(fd)
        path.unlink()
    pages = size // PAGE
    return cpu / pages * 1e6, wall / pages * 1e6, touch / pages * 1e6


def touch_anonymous(size: int) -> tuple[float, float, float]:
    """Thread CPU µs per page to write one byte of each page of a new anonymous mapping."""
    mapping = mmap.mmap(-1, size)
    wall, cpu = time.perf_counter(), time.thread_time()
    for offset in range(0, size, PAGE):
        mapping[offset] = 1
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    mapping.close()
    return cpu / (size // PAGE) * 1e6, wall / (size // PAGE) * 1e6, 0.0


def balloon_reports_free_pages() -> bool | None:
    """Whether a virtio-balloon device offers free page reporting (feature bit 5)."""
    for features in Path("/sys/bus/virtio/drivers/virtio_balloon").glob("virtio*/features"):
        bits = features.read_text().strip()
        return len(bits) > 5 and bits[5] == "1"
    return None


def _line(name: str, cold: tuple[float, ...], recycled: tuple[float, ...]) -> str:
    return (
        f"{name:20s} cold: warm {cold[0]:5.2f} cpu {cold[1]:5.2f} wall, touch {cold[2]:5.2f}"
        f" | recycled: warm {recycled[0]:5.2f} cpu {recycled[1]:5.2f} wall,"
        f" touch {recycled[2]:5.2f}  (µs/page, thread CPU)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="memory per measurement")
    parser.add_argument(
        "--settle", type=float, default=4.0, help="seconds for freed pages to be reported"
    )
    parser.add_argument("--ways", default=",".join(WAYS), help="ways of warming, comma-separated")
    args = parser.parse_args()
    size = args.mib * 1024 * 1024
    print(f"virtio-balloon free page reporting: {balloon_reports_free_pages()}")
    measures: list[tuple[str, Callable[[], tuple[float, float, float]]]] = [
        (name, lambda way=WAYS[name]: warm_file(directory, size, way))
        for name in args.ways.split(",")
    ]
    measures.append(("anonymous page", lambda: touch_anonymous(size)))
    with tempfile.TemporaryDirectory(prefix="page-cost-", dir=os.getcwd()) as tmp:
        directory = Path(tmp)
        for name, measure in measures:
            time.sleep(args.settle)  # what was freed before is the host's again
            cold = measure()
            recycled = measure()  # straight away: the pages just freed are still backed
            print(_line(name, cold, recycled), flush=True)


if __name__ == "__main__":
    main()
