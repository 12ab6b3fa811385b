"""The whole reconciliation job as an operator runs it (``python -m ops.spark run``), on a master
store of 1 KiB messages (BENCH_RECONCILE_MB, 512 by default) and a slave cut at 60 % of it:
wall time, the parse phase's MB/s (backup bytes over the time from the segment listing to the
"master backup parsed" line) and the peak RSS of the whole process tree (driver JVM + Python
workers), sampled every 0.2 s.

BENCH_RECONCILE_TREES=/path/a:/path/b runs each tree's job alternately (ROUNDS rounds, 2 by
default), each with its own .venv's interpreter when it has one (its Spark workers then import
that tree's code), so two versions are compared in one run on one machine. Besides the whole
job's CPU, the parse phase's: the CPU-seconds of the process tree between those two phase lines,
per MiB of backup (read throughput per core). Printed, never asserted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec

MB = int(os.environ.get("BENCH_RECONCILE_MB", "512"))
SEGMENT = int(os.environ.get("BENCH_RECONCILE_SEGMENT_MB", "64")) << 20
ROUNDS = int(os.environ.get("ROUNDS", "2"))
HERE = Path(__file__).resolve().parents[1]
PHASE = re.compile(r"\[(\d+)\][^\n]*?(\d+\.\d) s")


def store(root: Path, role: BrokerRole = BrokerRole.ASYNC_MASTER) -> DefaultMessageStore:
    config = MessageStoreConfig(
        store_path_root_dir=root, mapped_file_size_commit_log=SEGMENT, broker_role=role
    )
    s = DefaultMessageStore(config, store_host=("127.0.0.1", 10911))
    s.load()
    return s


def build(root: Path) -> int:
    master = store(root / "master")
    entries = [(0, b"x" * 1024, f"KEYS\x01k{i}\x02TAGS\x01A") for i in range(32)]
    body = codec.encode_batch_body(entries)
    cut = 0
    while master.max_phys_offset < MB << 20:
        batch = MessageExtBrokerInner(
            topic=f"Bench{master.max_phys_offset % 3}",
            queue_id=master.max_phys_offset % 4,
            body=body,
            properties={},
            born_timestamp=1_700_000_000_000,
            born_host=(b"\x7f\x00\x00\x01", 40000),
        )
        assert master.put_messages(batch).ok
        if not cut and master.max_phys_offset >= (MB << 20) * 6 // 10:
            cut = master.max_phys_offset
    size = master.max_phys_offset
    master.shutdown()
    shutil.copytree(root / "master", root / "slave")
    slave = store(root / "slave", BrokerRole.SLAVE)
    slave.truncate_dirty_tail(cut)
    slave.shutdown()
    return size


def sample(pid: int, stop: threading.Event, peak: list[int], cpu: dict[int, tuple]) -> None:
    """Peak RSS of the tree (``peak[0]``; ``peak[1:4]``: the peaks of the JVM, of the driver's
    Python, of all Python workers together), and each process's last seen CPU seconds by kind
    (JVM, Python)."""
    try:
        top = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.wait(0.2):
        total, parts = 0, [0, 0, 0]
        try:
            procs = [top, *top.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in procs:
            try:
                with proc.oneshot():
                    rss = proc.memory_info().rss
                    total += rss
                    times = proc.cpu_times()
                    kind = "jvm" if "java" in proc.name() else "python"
                    parts[0 if kind == "jvm" else 1 if proc.pid == pid else 2] += rss
                    cpu[proc.pid] = (kind, times.user + times.system)
            except psutil.Error:
                continue
        peak[:] = [max(a, b) for a, b in zip(peak, [total, *parts], strict=True)]


def run(tree: Path, root: Path, size: int) -> str:
    out = root / "out"
    shutil.rmtree(out, ignore_errors=True)
    python = tree / ".venv" / "bin" / "python"
    argv = [str(python) if python.exists() else sys.executable, "-m", "ops.spark", "run", "--backup", str(root / "master" / "commitlog"),
            "--slave-store", str(root / "slave"), "--out", str(out), "--master", "local[2]"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    stop, peak, cpu = threading.Event(), [0, 0, 0, 0], {}
    sampler = threading.Thread(target=sample, args=(proc.pid, stop, peak, cpu))
    sampler.start()
    marks: dict[str, float] = {}  # the tree's CPU-seconds when a phase line appeared
    lines_seen: list[str] = []

    def watch() -> None:
        for line in proc.stderr:
            lines_seen.append(line)
            for mark in ("backup segments", "master backup parsed"):
                if mark in line:
                    marks[mark] = sum(c for _, c in cpu.values())

    watcher = threading.Thread(target=watch)
    watcher.start()
    stdout = proc.stdout.read()
    proc.wait()
    watcher.join()
    stderr = "".join(lines_seen)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    if proc.returncode:
        return f"{tree}: exit {proc.returncode}: {stderr.strip()[-300:]}"
    lines = stdout + stderr
    listed = re.search(
        r"backup segments[^\n]*?\((\d+\.\d) s\)|\s(\d+\.\d) s  \d+ backup segments", lines
    )
    parsed = re.search(
        r"\s(\d+\.\d) s  master backup parsed|master backup parsed[^\n]*\((\d+\.\d) s\)", lines
    )
    if not listed or not parsed:
        return f"{tree}: phases not found"
    seconds = float(parsed.group(1) or parsed.group(2)) - float(listed.group(1) or listed.group(2))
    jvm = sum(c for kind, c in cpu.values() if kind == "jvm")
    python = sum(c for kind, c in cpu.values() if kind == "python")
    mib = size / 2**20
    parse_cpu = marks.get("master backup parsed", 0.0) - marks.get("backup segments", 0.0)
    return (
        f"{tree.name:>12}: wall {wall:6.1f} s, parse phase {seconds:6.1f} s = "
        f"{mib / seconds:6.1f} MiB/s, peak RSS {peak[0] / 2**20:,.0f} MiB "
        f"(JVM {peak[1] / 2**20:,.0f}, driver {peak[2] / 2**20:,.0f}, workers {peak[3] / 2**20:,.0f}), CPU {jvm + python:6.1f} s "
        f"(JVM {jvm:.1f}, Python {python:.1f}) = {mib / (jvm + python):5.1f} MiB per CPU-second; parse phase CPU {parse_cpu:5.1f} s "
        f"= {mib / max(parse_cpu, 0.1):5.1f} MiB per CPU-second"
    )


def main() -> None:
    trees = [Path(t) for t in os.environ.get("BENCH_RECONCILE_TREES", str(HERE)).split(":")]
    root = Path(tempfile.mkdtemp(prefix="bench-reconcile-"))
    try:
        size = build(root)
        print(f"master {size / 2**20:,.0f} MiB in {SEGMENT >> 20} MiB segments, slave at 60 %")
        for n in range(ROUNDS):
            for tree in trees if n % 2 == 0 else reversed(trees):
                print(run(tree, root, size), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
