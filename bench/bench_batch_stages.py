"""A batch put's store stages in one process, without sockets: µs per 1 KiB message of a
SEND_BATCH_MESSAGE of 32 (``python -m bench.bench_batch_stages``): the body's plan (decode,
checks, CRCs) and the whole ``put_messages`` (plan, append, ConsumeQueue units, index entries,
wake-ups). The CommitLog segment is written through once first, so the figure leaves out the
first touch of new pages (the page warmer's cost, docs/scaling.md). The thread's CPU time,
minimum of 7 rounds: run it in two trees one after the other, alternating, to compare them
(docs/scaling.md, "Batches of 32 on 8 connections"). Printed, never asserted."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from broker.store.batch_records import batch_plan
from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec

BATCH = 32
ROUNDS = 800
BODY = codec.encode_batch_body(
    [(0, b"x" * 1024, f"UNIQ_KEY\x01U{i}\x02TAGS\x01TagA") for i in range(BATCH)]
)


def per_message_us(fn: Callable[[], object]) -> float:
    fn()
    best = float("inf")
    for _ in range(7):
        started = time.thread_time()
        for _ in range(ROUNDS):
            fn()
        best = min(best, (time.thread_time() - started) / ROUNDS / BATCH * 1e6)
    return best


def batch() -> MessageExtBrokerInner:
    # topic, queue_id, body, properties, flag, sys_flag, born_timestamp, born_host
    return MessageExtBrokerInner(
        "BatchTopic", 1, BODY, {"WAIT": "true", "CLUSTER": "DefaultCluster"}, 0, 0,
        1_700_000_000_000, (b"\x7f\x00\x00\x01", 40000),
    )  # fmt: skip


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    store = DefaultMessageStore(
        MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=256 << 20),
        store_host=("127.0.0.1", 10911),
    )
    store.load()
    try:
        assert store.put_messages(batch()).ok
        segment = store.commit_log.queue.files[-1]
        start = segment.wrote_position
        segment.mmap[start:] = bytes(len(segment.mmap) - start)  # first touch, out of the way
        rows = [
            (
                "batch plan (decode, checks, CRCs)",
                per_message_us(
                    lambda: batch_plan(BODY, b"WAIT\x01true\x02CLUSTER\x01DefaultCluster", 100, 4 << 20, 32767)
                ),
            ),
            ("store put_messages (plan, append, dispatch)", per_message_us(lambda: store.put_messages(batch()))),
        ]  # fmt: skip
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    for label, us in rows:
        print(f"{label:<46} {us:6.3f} us per message", flush=True)


if __name__ == "__main__":
    main()
