"""The reconciliation job's parse throughput: a CommitLog of 1 KiB messages (1 GiB by default,
BENCH_SPARK_MB to change) read by the ``commitlog`` data source on local[1] and local[2], with
the peak RSS of the Python workers. Printed, never asserted."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psutil

from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec

MB = int(os.environ.get("BENCH_SPARK_MB", "1024"))
SEGMENT = 256 << 20


def build(root: Path) -> int:
    store = DefaultMessageStore(
        MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=SEGMENT),
        store_host=("127.0.0.1", 10911),
    )
    store.load()
    entries = [(0, b"x" * 1024, f"KEYS\x01k{i}\x02TAGS\x01A") for i in range(32)]
    batch_body = codec.encode_batch_body(entries)
    t0 = time.perf_counter()
    while store.max_phys_offset < MB << 20:
        batch = MessageExtBrokerInner(
            topic=f"Bench{store.max_phys_offset % 3}",
            queue_id=store.max_phys_offset % 4,
            body=batch_body,
            properties={},
            born_timestamp=1_700_000_000_000,
            born_host=(b"\x7f\x00\x00\x01", 40000),
        )
        assert store.put_messages(batch).ok
    size = store.max_phys_offset
    store.shutdown()
    print(
        f"built {size / 2**20:,.0f} MiB CommitLog in {time.perf_counter() - t0:.1f} s", flush=True
    )
    return size


def python_workers_peak(stop: threading.Event, peak: list[int]) -> None:
    me = psutil.Process()
    while not stop.wait(0.2):
        total = 0
        for child in me.children(recursive=True):
            try:
                if "python" in child.name() and "pyspark" in " ".join(child.cmdline()):
                    peak[0] = max(peak[0], child.memory_info().rss)
                    total += 1
            except psutil.Error:
                continue


def measure(path: Path, size: int, master: str) -> None:
    from pyspark.sql import functions as F

    from ops.spark.session import spark_session

    spark = spark_session(master, quiet=True)
    try:
        spark.read.format("commitlog").load(str(path)).limit(1).collect()  # warm the workers
        stop, peak = threading.Event(), [0]
        sampler = threading.Thread(target=python_workers_peak, args=(stop, peak), daemon=True)
        sampler.start()
        # The first full pass pays the JVM's JIT warm-up; the second is what a job over a
        # large backup runs at for most of its life. Both are printed.
        for label in ("first pass", "second pass"):
            t0 = time.perf_counter()
            row = (
                spark.read.format("commitlog")
                .option("splitBytes", str(128 << 20))
                .load(str(path))
                .agg(F.count("*").alias("n"), F.sum(F.col("crc_ok").cast("int")).alias("ok"))
                .first()
            )
            elapsed = time.perf_counter() - t0
            print(
                f"{master:<9} {label:<11} {size / 2**20 / elapsed:7.1f} MiB/s  "
                f"{row['n'] / elapsed:10,.0f} records/s  ({row['n']:,} records, "
                f"{row['ok']:,} CRC ok, {elapsed:.1f} s)  python worker peak RSS "
                f"{peak[0] / 2**20:,.0f} MiB",
                flush=True,
            )
        stop.set()
        sampler.join()
    finally:
        spark.stop()


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        size = build(root)
        for master in ("local[1]", "local[2]"):
            measure(root / "commitlog", size, master)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
