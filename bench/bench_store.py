"""The message store in process, one core, ASYNC_FLUSH: put + dispatch of 1 KiB messages with a
key, batch puts of 32, get_message 32 at a time from a warm queue (also through a SQL92 filter), abnormal recovery of a 1 GiB
CommitLog (BENCH_STORE_MB) with the share spent reading vs in Python, and RSS as the store
grows. Printed, never asserted."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import psutil

from broker.processor.message_filter import ExpressionMessageFilter
from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec

SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
RECOVERY_MB = int(os.environ.get("BENCH_STORE_MB", "1024"))
BODY = b"x" * 1024


def open_store(root: Path) -> DefaultMessageStore:
    store = DefaultMessageStore(
        MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=256 << 20),
        store_host=("127.0.0.1", 10911),
    )
    store.load()
    return store


def single(i: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic="Bench",
        queue_id=i % 8,
        body=BODY,
        properties={"KEYS": f"k{i}", "UNIQ_KEY": f"U{i:030d}", "TAGS": "A"},
        born_timestamp=1_700_000_000_000,
        born_host=(b"\x7f\x00\x00\x01", 40000),
    )


BATCH_BODY = codec.encode_batch_body(
    [(0, BODY, f"KEYS\x01b{i}\x02UNIQ_KEY\x01B{i:030d}\x02TAGS\x01A") for i in range(32)]
)


def batch(i: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic="BenchBatch",
        queue_id=i % 8,
        body=BATCH_BODY,
        properties={},
        born_timestamp=1_700_000_000_000,
        born_host=(b"\x7f\x00\x00\x01", 40000),
    )


def timed(label: str, fn, per_call: int) -> float:
    calls, t0 = 0, time.perf_counter()
    deadline = t0 + SECONDS
    while time.perf_counter() < deadline:
        for _ in range(100):
            fn(calls)
            calls += 1
    rate = calls * per_call / (time.perf_counter() - t0)
    print(f"{label:<44} {rate:>10,.0f} msg/s", flush=True)
    return rate


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-store-"))
    me = psutil.Process()
    try:
        store = open_store(root / "a")
        rss0, private0 = rss_mib(me)
        timed("put + dispatch, 1 KiB with key", lambda i: store.put_message(single(i)), 1)
        timed("batch put + dispatch, 32 x 1 KiB", lambda i: store.put_messages(batch(i)), 32)
        top = store.get_max_offset_in_queue("Bench", 0)

        def get(i: int) -> None:
            offset = (i * 32) % max(top - 32, 1)
            result = store.get_message("G", "Bench", 0, offset, 32)
            assert result.message_count == 32

        timed("get_message 32 from a warm queue", get, 32)
        sql = ExpressionMessageFilter("TAGS = 'A' AND KEYS IS NOT NULL")

        def get_sql(i: int) -> None:
            offset = (i * 32) % max(top - 32, 1)
            result = store.get_message("G", "Bench", 0, offset, 32, sql)
            assert result.message_count == 32

        timed("get_message 32, SQL92 judging every record", get_sql, 32)
        size = store.max_phys_offset
        rss, private = rss_mib(me)
        print(
            f"RSS {rss0:,.0f} -> {rss:,.0f} MiB storing {size / 2**20:,.0f} MiB; without the "
            f"mapped store files (page cache, the kernel's): {private0:,.0f} -> {private:,.0f} MiB",
            flush=True,
        )
        store.shutdown()

        big = root / "b"
        store = open_store(big)
        while store.max_phys_offset < RECOVERY_MB << 20:
            for i in range(100):
                store.put_messages(batch(i))
        size = store.max_phys_offset
        store.shutdown()
        (big / "abort").write_text("")  # as after kill -9
        for path in (big / "consumequeue").rglob("*"):
            if path.is_file():
                path.unlink()  # queues lost too: recovery re-dispatches everything
        read_s = _read_time(big / "commitlog")
        t0 = time.perf_counter()
        store = open_store(big)
        elapsed = time.perf_counter() - t0
        print(
            f"abnormal recovery of {size / 2**20:,.0f} MiB (queues rebuilt): {elapsed:.1f} s "
            f"({size / 2**20 / elapsed:,.0f} MiB/s); reading the files alone takes {read_s:.1f} s "
            f"(page cache warm), so ~{max(0.0, 1 - read_s / elapsed):.0%} of it is Python work",
            flush=True,
        )
        store.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def rss_mib(process: psutil.Process) -> tuple[float, float]:
    """(RSS, RSS less file-backed pages) in MiB: mapped CommitLog pages count in RSS but are
    page cache the kernel may drop, not the process's own memory."""
    info = process.memory_info()
    return info.rss / 2**20, (info.rss - info.shared) / 2**20


def _read_time(folder: Path) -> float:
    t0 = time.perf_counter()
    for path in sorted(folder.iterdir()):
        with open(path, "rb") as handle:
            while handle.read(8 << 20):
                pass
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
