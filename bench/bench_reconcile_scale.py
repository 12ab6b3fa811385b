"""The reconciliation job at operators' sizes: a synthetic master backup of BENCH_SCALE_GIB GiB
(comma-separated sizes; 2 by default, ops/spark/README.md's figures with "2,20") in 1 GiB
segments, and a slave holding all of it but the last half segment, run in local mode
(local[2]) through ``python -m ops.spark run`` as bench_reconcile runs it: wall time, parse MiB/s, CPU by JVM and Python, peak RSS of driver +
JVM + Python workers. Printed, never asserted.

The backup is written quickly but is a real CommitLog: one segment is built by the store's
own append path (DefaultMessageStore.put_messages, 1 KiB messages in batches of 32, three
topics of four queues), then copied to each further offset with every record's PHYSICALOFFSET
and QUEUEOFFSET rewritten to where it now lies (the body CRC covers the body only, so each
copy stays a valid log; a broker recovers it). The slave's segments are hard links to the
backup's (the job only reads them) but for its last one, a copy cut at a record boundary.
BENCH_SCALE_DIR chooses the folder (default: a temporary one, removed at the end);
BENCH_SCALE_KEEP=1 keeps the generated stores there for the next run.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import time
from pathlib import Path

from bench.bench_reconcile import run
from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from ops.spark.reader import read_range
from ops.spark.segments import list_segments, ranges
from remoting import message as codec
from remoting.record import PHYS_OFFSET_POS, QUEUE_OFFSET_POS

SEGMENT = 1 << 30
HERE = Path(__file__).resolve().parents[1]
_LONG = struct.Struct(">q")


def template(root: Path) -> tuple[bytes, list[tuple[int, tuple[str, int]]]]:
    """One full segment written by the store (closed by the BLANK record the store writes when
    a batch no longer fits), and (position, queue) of each of its records."""
    store = DefaultMessageStore(
        MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=SEGMENT),
        store_host=("127.0.0.1", 10911),
    )
    store.load()
    entries = [(0, b"x" * 1024, f"KEYS\x01k{i}\x02TAGS\x01A") for i in range(32)]
    body = codec.encode_batch_body(entries)
    while store.max_phys_offset <= SEGMENT:  # until it rolls: the segment ends in a BLANK
        batch = MessageExtBrokerInner(
            topic=f"Bench{store.max_phys_offset % 3}",
            queue_id=store.max_phys_offset % 4,
            body=body,
            properties={},
            born_timestamp=1_700_000_000_000,
            born_host=(b"\x7f\x00\x00\x01", 40000),
        )
        assert store.put_messages(batch).ok
    store.shutdown()
    segment = list_segments(root / "commitlog")[0]
    records = [
        (row.phys_offset, (row.topic, row.queue_id))
        for rng in ranges([segment])
        for row in read_range(rng)
        if row.kind == "MESSAGE"
    ]
    return Path(segment.path).read_bytes(), records


def generate(root: Path, gib: int) -> tuple[int, int]:
    """``root/master/commitlog`` of ``gib`` segments and ``root/slave``; (backup bytes, the
    slave's end)."""
    base, records = template(root / "template")
    per_queue: dict[tuple[str, int], int] = {}
    for _, queue in records:
        per_queue[queue] = per_queue.get(queue, 0) + 1
    master = root / "master" / "commitlog"
    slave = root / "slave" / "commitlog"
    master.mkdir(parents=True)
    slave.mkdir(parents=True)
    end = 0
    for k in range(gib):
        data = bytearray(base)
        seen: dict[tuple[str, int], int] = {}
        for position, queue in records:
            n = seen.get(queue, 0)
            seen[queue] = n + 1
            _LONG.pack_into(data, position + PHYS_OFFSET_POS, k * SEGMENT + position)
            _LONG.pack_into(data, position + QUEUE_OFFSET_POS, k * per_queue[queue] + n)
        name = f"{k * SEGMENT:020d}"
        (master / name).write_bytes(data)
        if k < gib - 1:
            os.link(master / name, slave / name)
        else:  # the slave stopped half way through the last segment
            cut = records[len(records) // 2][0]
            data[cut:] = bytes(len(data) - cut)
            (slave / name).write_bytes(data)
            end = k * SEGMENT + cut
        del data
    shutil.rmtree(root / "template")
    (root / "generated").write_text(str(end))
    return gib * SEGMENT, end


def main() -> None:
    sizes = [int(s) for s in os.environ.get("BENCH_SCALE_GIB", "2").split(",")]
    given = os.environ.get("BENCH_SCALE_DIR")
    for gib in sizes:
        root = Path(given) / f"{gib}g" if given else Path(tempfile.mkdtemp(prefix="bench-scale-"))
        try:
            t0 = time.perf_counter()
            if (root / "generated").exists():  # kept from a run with BENCH_SCALE_KEEP
                size, slave_end = gib * SEGMENT, int((root / "generated").read_text())
            else:
                shutil.rmtree(root, ignore_errors=True)
                size, slave_end = generate(root, gib)
            print(
                f"{gib} GiB backup ({size:,} bytes, slave ends at {slave_end:,}) generated in "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            print(run(HERE, root, size), flush=True)
        finally:
            if not os.environ.get("BENCH_SCALE_KEEP"):
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
