"""Where a broker's CPU goes by thread: ``python -m bench.bench_threads [shape ...]``.

One broker of this tree takes each shape of bench/bench_ab.py for a few seconds; every thread's
user and system CPU per message and minor faults per message are read from
/proc/<pid>/task/<tid>/stat before and after, and the threads are named by ``py-spy dump``
(Python 3.11 does not give its threads names the kernel shows). The process-wide figure that
bench_ab reports hides which of these a change moved: the event loop's thread is the one that
bounds the rate; the page warmer, the reply sender and the flush workers run beside it on the
second core. Printed, never asserted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import loadgen
from bench.bench_ab import HERE, shapes, tree_broker

SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
TICK = os.sysconf("SC_CLK_TCK")
PY_SPY = Path(sys.executable).parent / "py-spy"


def thread_stats(pid: int) -> dict[int, tuple[float, float, int]]:
    """tid -> (user s, system s, minor faults)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:  # the thread ended between the listing and the read
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(tid)] = (int(fields[11]) / TICK, int(fields[12]) / TICK, int(fields[7]))
    return out


def thread_names(pid: int) -> dict[int, str]:
    if not PY_SPY.exists():
        return {}
    dump = subprocess.run([str(PY_SPY), "dump", "--pid", str(pid)], capture_output=True, text=True)
    return {
        int(m[1], 0): m[2] for m in re.finditer(r'Thread (\S+) \(\w+\): "([^"]+)"', dump.stdout)
    }


def main(argv: list[str]) -> None:
    wanted = argv or ["sync8", "pipe256", "batch32x8"]
    root = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    broker = tree_broker(HERE, root, 32491)
    try:
        loadgen.run(broker.addr, shapes()["sync1"][0], duration_s=1)
        for shape in wanted:
            frames, per, window = shapes()[shape]
            before = thread_stats(broker.proc.pid)
            results = loadgen.run(broker.addr, frames, duration_s=SECONDS, window=window)
            after = thread_stats(broker.proc.pid)
            names = thread_names(broker.proc.pid)  # threads start as they are first needed
            messages = max(1, sum(r.requests - r.errors for r in results) * per)
            rate = messages / max(r.elapsed_s for r in results)
            print(f"{shape}: {rate:,.0f} msg/s; per message, by thread:", flush=True)
            for tid, (user, system, faults) in sorted(after.items()):
                user0, system0, faults0 = before.get(tid, (0.0, 0.0, 0))
                cpu = (user - user0 + system - system0) * 1e6 / messages
                if cpu > 0:
                    name = names.get(tid, "(native)")
                    print(
                        f"  {name:<16} {cpu:6.2f} us (user {(user - user0) * 1e6 / messages:6.2f}"
                        f" sys {(system - system0) * 1e6 / messages:6.2f})"
                        f"  minor faults {(faults - faults0) / messages:.3f}",
                        flush=True,
                    )
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
