"""The ConsumeQueue flush round's hold on the event loop with many queues (docs/monitoring.md
"Figures"). Printed, never asserted.

A store with QUEUES ConsumeQueues (1,000 topics x 8 queues by default), one unit each, all
flushed; then ROUNDS rounds in which WRITTEN queues take a unit and FlushConsumeQueueService
.flush_once runs, as its 1 s timer would, while a ticker task measures the longest gap the
loop left it. Per round: the loop thread's CPU (time.thread_time: the fsyncs in worker threads
are not counted) and the longest gap.

BENCH_CQ_FLUSH_BASE=<a tree of an older commit> runs the same rounds with that tree's store in a
child process, alternating with this tree's, for before/after figures in one run.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPICS = int(os.environ.get("BENCH_CQ_FLUSH_TOPICS", "1000"))
QUEUES_PER_TOPIC = 8
WRITTEN = int(os.environ.get("BENCH_CQ_FLUSH_WRITTEN", "50"))
ROUNDS = int(os.environ.get("BENCH_CQ_FLUSH_ROUNDS", "30"))
REPEATS = int(os.environ.get("BENCH_CQ_FLUSH_REPEATS", "2"))
BASE = os.environ.get("BENCH_CQ_FLUSH_BASE", "")
HERE = Path(__file__).resolve().parent.parent


def child() -> None:
    import trio

    from broker.store.config import MessageStoreConfig
    from broker.store.message_store import DefaultMessageStore
    from broker.store.types import MessageExtBrokerInner

    def message(topic: str, queue_id: int) -> MessageExtBrokerInner:
        return MessageExtBrokerInner(
            topic=topic,
            queue_id=queue_id,
            body=b"x" * 64,
            properties={},
            born_timestamp=1_700_000_000_000,
            born_host=(b"\x7f\x00\x00\x01", 40000),
        )

    root = Path(tempfile.mkdtemp(prefix="bench-cq-flush-"))
    config = MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=256 * 1024 * 1024,
        mapped_file_size_consume_queue=20 * 300,
        max_hash_slot_num=50_000,
        max_index_num=200_000,
    )
    store = DefaultMessageStore(config, store_host=("127.0.0.1", 10911))
    store.load()
    queues = [(f"T{t}", q) for t in range(TOPICS) for q in range(QUEUES_PER_TOPIC)]
    for topic, queue_id in queues:
        assert store.put_message(message(topic, queue_id)).ok
    rng = random.Random(7)

    async def main() -> tuple[list[float], list[float]]:
        cpu_ms, gaps_ms = [], []
        await store.flush_queues.flush_once(0, thorough=True)
        for _ in range(ROUNDS):
            for topic, queue_id in rng.sample(queues, WRITTEN):
                store.put_message(message(topic, queue_id))
            worst = [0.0]
            done = trio.Event()

            async def ticker(worst: list[float] = worst, done: trio.Event = done) -> None:
                while not done.is_set():
                    before = time.perf_counter()
                    await trio.sleep(0)
                    worst[0] = max(worst[0], time.perf_counter() - before)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ticker)
                await trio.sleep(0)
                cpu0 = time.thread_time()
                await store.flush_queues.flush_once(2, thorough=False)
                cpu_ms.append((time.thread_time() - cpu0) * 1000)
                done.set()
            gaps_ms.append(worst[0] * 1000)
        return cpu_ms, gaps_ms

    try:
        cpu_ms, gaps_ms = trio.run(main)
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{len(queues):,} queues, {WRITTEN} written a round: loop thread CPU per round median "
        f"{statistics.median(cpu_ms):.1f} ms, worst {max(cpu_ms):.1f} ms; longest loop gap "
        f"median {statistics.median(gaps_ms):.1f} ms, worst {max(gaps_ms):.1f} ms",
        flush=True,
    )


def run_in(tree: Path, label: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "child"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    print(label + (done.stdout.strip() or done.stderr.strip()[-2000:]), flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child()
        return
    for _ in range(REPEATS):
        if BASE:
            run_in(Path(BASE), "before: ")
        run_in(HERE, "after:  " if BASE else "")


if __name__ == "__main__":
    main()
