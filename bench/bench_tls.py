"""What TLS costs the broker: sync sends of 1 KiB (1 and 4 connections) and consumption (pull
32, 1 and 4 connections, of messages stored once up front), TLS vs plain against one broker with
``tls.server.mode=permissive`` (a plain connection there takes the same fast paths as on a
broker without TLS; the mode only peeks at a connection's first byte when it opens). Both sides
use the Python load generator (the C one has no TLS), alternating in rounds so both see the same
machine. Prints each round, then per workload the median rate TLS / plain and the broker's CPU
per message. Printed, never asserted."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import loadgen
from bench.bench_broker import QUEUES, Broker, pull_frame, send_frame

ROUNDS = int(os.environ.get("BENCH_TLS_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
CONSUME_MESSAGES = int(os.environ.get("BENCH_TLS_CONSUME_MESSAGES", "200000"))
CONNECTIONS = (1, 4)


def certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway self-signed certificate (EC P-256) made by the openssl command."""
    cert, key = folder / "bench.pem", folder / "bench.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-subj", "/CN=bench", "-days", "1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def sends(broker: Broker, connections: int, tls: bool) -> tuple[float, float]:
    """(msg/s, broker CPU-microseconds per message) of sync sends."""
    frames = [
        [send_frame("TlsSync", (w + q) % QUEUES) for q in range(QUEUES)] for w in range(connections)
    ]
    cpu0 = broker.cpu_s()
    results = loadgen.run(broker.addr, frames, duration_s=SECONDS, tls=tls, python=True)
    cpu = broker.cpu_s() - cpu0
    messages = sum(r.requests - r.errors for r in results)
    return messages / max(r.elapsed_s for r in results), cpu / max(messages, 1) * 1e6


def _puller(queues: list[int], per_queue: int) -> Callable[[int, memoryview], bytes | None]:
    """Pulls each of ``queues`` from offset 0 to ``per_queue``, one after the other."""
    state = {"at": 0, "offset": 0}

    def next_frame(code: int, body: memoryview) -> bytes | None:
        if code == 0:
            state["offset"] += loadgen.count_records(body)
        if code != 0 or state["offset"] >= per_queue:
            state["at"] += 1
            state["offset"] = 0
            if state["at"] == len(queues):
                return None
        return pull_frame("TlsConsume", queues[state["at"]], state["offset"])

    return next_frame


def consume(broker: Broker, connections: int, tls: bool, per_queue: int) -> tuple[float, float]:
    """(msg/s, broker CPU-microseconds per message) reading every stored message once."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    share = [list(range(QUEUES))[w::connections] for w in range(connections)]
    procs = [
        ctx.Process(
            target=loadgen._worker,
            args=(
                broker.addr,
                [pull_frame("TlsConsume", queues[0], 0)],
                3600,
                10**9,
                _puller(queues, per_queue),
                out,
                tls,
            ),
        )
        for queues in share
    ]
    cpu0, t0 = broker.cpu_s(), time.perf_counter()
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    cpu = broker.cpu_s() - cpu0
    records = sum(r.records for r in results)
    return records / elapsed, cpu / max(records, 1) * 1e6


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    cert, key = certificate(root)
    broker = Broker(
        root,
        31911,
        f"tls.server.mode=permissive\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n",
        name="tls",
    )
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        loadgen.run(broker.addr, [[send_frame("TlsSync", q) for q in range(QUEUES)]], duration_s=1)
        per_queue = CONSUME_MESSAGES // QUEUES // 32 * 32
        fill = [[send_frame("TlsConsume", q, batch=32)] for q in range(QUEUES)]
        loadgen.run(broker.addr, fill, duration_s=3600, max_requests=per_queue // 32)
        print(f"stored {per_queue * QUEUES:,} messages of 1 KiB to consume", flush=True)
        workloads: list[tuple[str, Callable[[bool], tuple[float, float]]]] = []
        for n in CONNECTIONS:
            workloads.append(
                (f"sync send, {n} connection(s)", lambda tls, n=n: sends(broker, n, tls))
            )
        for n in CONNECTIONS:
            workloads.append(
                (
                    f"consume pull 32, {n} connection(s)",
                    lambda tls, n=n: consume(broker, n, tls, per_queue),
                )
            )
        for round_no in range(ROUNDS):
            order = ("plain", "tls") if round_no % 2 == 0 else ("tls", "plain")
            for label, run in workloads:
                for side in order:
                    rate, cpu_us = run(side == "tls")
                    figures.setdefault((label, side), []).append((rate, cpu_us))
                    print(
                        f"round {round_no + 1} {side:<5} {label:<30} {rate:>9,.0f} msg/s  "
                        f"broker CPU {cpu_us:6.1f} us/msg",
                        flush=True,
                    )
        print()
        for label, _ in workloads:
            plain, tls = figures[(label, "plain")], figures[(label, "tls")]
            rate_plain = statistics.median(r for r, _ in plain)
            rate_tls = statistics.median(r for r, _ in tls)
            cpu_plain = statistics.median(c for _, c in plain)
            cpu_tls = statistics.median(c for _, c in tls)
            print(
                f"{label:<30} TLS/plain rate {rate_tls / rate_plain:5.2f}  "
                f"({rate_tls:,.0f} vs {rate_plain:,.0f} msg/s)  broker CPU per message "
                f"{cpu_tls:.1f} vs {cpu_plain:.1f} us (+{cpu_tls - cpu_plain:.1f} us)",
                flush=True,
            )
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
