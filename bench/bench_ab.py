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
from bench.consumer_frames import (
    LIVE_MESSAGES,
    HeldConsumer,
    consume_frame,
    create_live_topic,
    live_consume,
    offset_frame,
)

SLICE_S = float(os.environ.get("BENCH_SLICE_SECONDS", "1.5"))
SLICES = int(os.environ.get("BENCH_SLICES", "8"))
# Two brokers on PORT and PORT + 10 (each with its HA port next to it): helpers sharing a
# machine give each run its own.
PORT = int(os.environ.get("BENCH_AB_PORT", "32471"))
HERE = Path(__file__).resolve().parent.parent
LIVE_STORED: dict[tuple[str, int], int] = {}  # per broker: messages in the live queue


def tree_broker(tree: Path, root: Path, port: int) -> Broker:
    """A broker of ``tree`` on ``port`` (HA on the next port, so two can run at once). Stops
    the run when it does not start: the load would go to whatever else listens there."""
    broker = Broker(root, port, f"haListenPort={port + 1}\n", name=f"ab{port}", tree=tree)
    if broker.proc.poll() is not None:
        raise SystemExit(f"the broker of {tree} on port {port} did not start")
    return broker


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
        # commitOffset moves on between the pulls of a queue, as a consumer's does
        "consume32": (
            [[consume_frame(q, 1 + k, posted=False) for k in range(4) for q in range(QUEUES)]],
            32,
            1,
        ),
        "consume32s": (
            [[consume_frame(q, 1 + k, posted=True) for k in range(4) for q in range(QUEUES)]],
            32,
            1,
        ),
        "offsets": ([[offset_frame(q, 1 + k) for k in range(4) for q in range(QUEUES)]], 1, 1),
        # sync sends to one queue while a push consumer, caught up, long-polls it (per 0:
        # bench.consumer_frames.live_consume runs it)
        "live": ([], 0, 1),
        "pull32mixed": ([[pull_frame("MixedTopic", q, 0) for q in range(QUEUES)]], 32, 1),
        "pull32x4": (
            [
                [pull_frame("PullTopic", (w + q) % QUEUES, 0) for q in range(QUEUES)]
                for w in range(4)
            ],
            32,
            1,
        ),
    }


def one_slice(broker: Broker, frames: list[list[bytes]], per: int, window: int) -> tuple:
    cpu0 = broker.cpu_s()
    if per == 0:  # the live consume: CPU per message sent and consumed
        start = LIVE_STORED[broker.addr]
        LIVE_STORED[broker.addr] = start + LIVE_MESSAGES
        consumed, wall = live_consume(broker, start)
        return (broker.cpu_s() - cpu0) / max(consumed, 1) * 1e6, consumed / wall
    results = loadgen.run(broker.addr, frames, duration_s=SLICE_S, window=window)
    cpu = broker.cpu_s() - cpu0
    messages = sum(r.requests - r.errors for r in results) * per
    wall = max(r.elapsed_s for r in results)
    return cpu / max(messages, 1) * 1e6, messages / wall


def fill_pull_topic(broker: Broker) -> None:
    """Pull 32 re-reads each queue's first 32 stored messages (from the page cache). In
    PullTopic a queue's 32 are one batch, adjacent in the CommitLog (the reply is one slice of
    it); in MixedTopic single sends took the queues in turn, so no two of a queue are adjacent
    (a slice per record)."""
    frames = [[send_frame("PullTopic", q, batch=32)] for q in range(QUEUES)]
    loadgen.run(broker.addr, frames, duration_s=60, max_requests=1)
    frames = [[send_frame("MixedTopic", q) for q in range(QUEUES)]]
    loadgen.run(broker.addr, frames, duration_s=60, max_requests=32 * QUEUES)


def main(argv: list[str]) -> None:
    if not argv:  # make bench runs every module: this one needs a second tree
        print("skipped: python -m bench.bench_ab /path/to/other/tree [shape ...]")
        return
    other = Path(argv[0]).resolve()
    wanted = argv[1:] or list(shapes())
    root = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    brokers: dict[str, Broker] = {}
    held: list[HeldConsumer] = []
    try:
        brokers["this"] = tree_broker(HERE, root, PORT)
        brokers["other"] = tree_broker(other, root, PORT + 10)
        for broker in brokers.values():
            loadgen.run(broker.addr, shapes()["sync1"][0], duration_s=1)
            fill_pull_topic(broker)
            held.append(HeldConsumer(broker))
            LIVE_STORED[broker.addr] = create_live_topic(broker)
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
                f"{name:<10} server us/msg this {med['this'][0]:6.2f} other {med['other'][0]:6.2f}"
                f"  ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
                f"  msg/s this {med['this'][1]:9,.0f} other {med['other'][1]:9,.0f}",
                flush=True,
            )
    finally:
        for consumer in held:
            consumer.close()
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
