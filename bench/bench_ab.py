"""Two trees' brokers side by side: ``python -m bench.bench_ab /path/to/other/tree [shape ...]``.

Both brokers run at once (each from its own tree's interpreter and C extensions); the load
generator switches between them in short slices, order alternating, so a shared machine's
swings hit both alike. Per shape it prints the median over slices of each broker's CPU per
message and rate, and the median of the per-slice ratios (this tree / the other). Printed,
never asserted; docs/scaling.md records what it gave."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench import loadgen
from bench.bench_broker import QUEUES, Broker, pull_frame, send_frame

SLICE_S = float(os.environ.get("BENCH_SLICE_SECONDS", "1.5"))
SLICES = int(os.environ.get("BENCH_SLICES", "8"))
# Helpers benchmarking at once on one machine each pick their own (two brokers, 10 apart).
PORT = int(os.environ.get("BENCH_AB_PORT", "32471"))
HERE = Path(__file__).resolve().parent.parent


def tree_broker(tree: Path, root: Path, port: int) -> Broker:
    """A broker of ``tree`` on ``port`` (HA on the next port, so two can run at once)."""
    return Broker(root, port, f"haListenPort={port + 1}\n", name=f"ab{port}", tree=tree)


def shapes() -> dict[str, tuple[list[list[bytes]], int, int]]:
    """name -> (frames per connection, messages per request, requests in flight)."""
    return {
        "sync1": ([[send_frame("SyncTopic", q) for q in range(QUEUES)]], 1, 1),
        "sync8": (
            [[send_frame("SyncTopic", (w + q) % QUEUES) for q in range(QUEUES)] for w in range(8)],
            1,
            1,
        ),
        "pipe256": ([[send_frame("PipeTopic", q) for q in range(QUEUES)]], 1, 256),
        "batch32": ([[send_frame("BatchTopic", q, batch=32) for q in range(QUEUES)]], 32, 1),
        "batch32x8": ([[send_frame("BatchTopic", w % QUEUES, batch=32)] for w in range(8)], 32, 1),
        "pull32": ([[pull_frame("PullTopic", q, 0) for q in range(QUEUES)]], 32, 1),
    }


def one_slice(broker: Broker, frames: list[list[bytes]], per: int, window: int) -> tuple:
    cpu0 = broker.cpu_s()
    results = loadgen.run(broker.addr, frames, duration_s=SLICE_S, window=window)
    cpu = broker.cpu_s() - cpu0
    messages = sum(r.requests - r.errors for r in results) * per
    wall = max(r.elapsed_s for r in results)
    return cpu / max(messages, 1) * 1e6, messages / wall


def fill_pull_topic(broker: Broker) -> None:
    """Pull 32 re-reads each queue's first 32 stored messages (from the page cache)."""
    frames = [[send_frame("PullTopic", q, batch=32)] for q in range(QUEUES)]
    loadgen.run(broker.addr, frames, duration_s=60, max_requests=1)


def main(argv: list[str]) -> None:
    if not argv:  # make bench runs every module: this one needs a second tree
        print("skipped: python -m bench.bench_ab /path/to/other/tree [shape ...]")
        return
    other = Path(argv[0]).resolve()
    wanted = argv[1:] or list(shapes())
    root = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    brokers = {"this": tree_broker(HERE, root, PORT), "other": tree_broker(other, root, PORT + 10)}
    try:
        for broker in brokers.values():
            loadgen.run(broker.addr, shapes()["sync1"][0], duration_s=1)
            fill_pull_topic(broker)
        print(f"this tree {HERE}, other {other}; {SLICES} slices of {SLICE_S} s each", flush=True)
        for name in wanted:
            frames, per, window = shapes()[name]
            got: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
            for index in range(SLICES):
                order = ("this", "other") if index % 2 == 0 else ("other", "this")
                for key in order:
                    got[key].append(one_slice(brokers[key], frames, per, window))
            ratios = [a[0] / b[0] for a, b in zip(got["this"], got["other"], strict=True)]
            med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in got.items()}
            print(
                f"{name:<10} server us/msg this {med['this'][0]:6.1f} other {med['other'][0]:6.1f}"
                f"  ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
                f"  msg/s this {med['this'][1]:9,.0f} other {med['other'][1]:9,.0f}",
                flush=True,
            )
    finally:
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
