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

    python -m bench.bench_page_cost [--mib 128] [--settle 4]
"""

from __future__ import annotations

import argparse
import mmap
import os
import tempfile
import time
from pathlib import Path

from broker.store.warm import MADV_POPULATE_WRITE

PAGE = 4096


def warm_file(directory: Path, size: int) -> float:
    """µs per page to MADV_POPULATE_WRITE a new sparse file's mapping (the warmer's call)."""
    path = directory / "segment"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, size)
        mapping = mmap.mmap(fd, size)
        start = time.perf_counter()
        mapping.madvise(MADV_POPULATE_WRITE, 0, size)
        took = time.perf_counter() - start
        mapping.close()
    finally:
        os.close(fd)
        path.unlink()
    return took / (size // PAGE) * 1e6


def touch_anonymous(size: int) -> float:
    """µs per page to write one byte of each page of a new anonymous mapping."""
    mapping = mmap.mmap(-1, size)
    start = time.perf_counter()
    for offset in range(0, size, PAGE):
        mapping[offset] = 1
    took = time.perf_counter() - start
    mapping.close()
    return took / (size // PAGE) * 1e6


def balloon_reports_free_pages() -> bool | None:
    """Whether a virtio-balloon device offers free page reporting (feature bit 5)."""
    for features in Path("/sys/bus/virtio/drivers/virtio_balloon").glob("virtio*/features"):
        bits = features.read_text().strip()
        return len(bits) > 5 and bits[5] == "1"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="memory per measurement")
    parser.add_argument(
        "--settle", type=float, default=4.0, help="seconds for freed pages to be reported"
    )
    args = parser.parse_args()
    size = args.mib * 1024 * 1024
    print(f"virtio-balloon free page reporting: {balloon_reports_free_pages()}")
    with tempfile.TemporaryDirectory(prefix="page-cost-", dir=os.getcwd()) as tmp:
        directory = Path(tmp)
        for name, measure in (
            ("CommitLog page, MADV_POPULATE_WRITE", lambda: warm_file(directory, size)),
            ("anonymous page, first write", lambda: touch_anonymous(size)),
        ):
            time.sleep(args.settle)  # what was freed before is the host's again
            cold = measure()
            recycled = measure()  # straight away: the pages just freed are still backed
            print(
                f"{name}: cold {cold:.2f} µs/page, recycled {recycled:.2f} µs/page, "
                f"cold / recycled {cold / recycled:.1f}"
            )


if __name__ == "__main__":
    main()
