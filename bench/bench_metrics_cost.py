"""What metrics cost a broker's sends: ``python -m bench metrics-cost`` (issue 25's "under 3 %").

Two brokers run at once on fresh stores: one with ``metricsExporterType=PROM``, scraped by a
thread of this process every ``--scrape-interval`` seconds as Prometheus would, one with metrics
off. Rounds alternate between them (which goes first alternates too, so a machine growing busier
or quieter is shared fairly), each round running the same load with the C load generator
(bench/loadgen.c): sync sends on 1 and on 8 connections, and batches of 32 x 1 KiB on 8. Per
round it prints the rate and the broker's CPU per message (µs), and at the end the medians and
the on/off ratios. Printed, never asserted: run it on a quiet machine; on a shared one the
spread between rounds says how far to trust the ratio.

    python -m bench metrics-cost [--rounds 5] [--seconds 5] [--scrape-interval 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import urllib.request
from pathlib import Path

from bench import loadgen
from bench.bench_broker import QUEUES, Broker, send_frame

PORTS = {False: 31951, True: 31971}  # listenPort of the broker with metrics off / on
METRICS_PORT = 31587

CASES = (
    ("sync send, 1 connection", lambda: [[send_frame("SyncTopic", q) for q in range(QUEUES)]], 1),
    (
        "sync send, 8 connections",
        lambda: [
            [send_frame("SyncTopic", (w + q) % QUEUES) for q in range(QUEUES)] for w in range(8)
        ],
        1,
    ),
    (
        "batch send 32 x 1 KiB, 8 connections",
        lambda: [[send_frame("BatchTopic", w % QUEUES, batch=32)] for w in range(8)],
        32,
    ),
)


class Scraper:
    """GETs /metrics (gzip, as Prometheus asks) every ``interval_s`` in a thread."""

    def __init__(self, port: int, interval_s: float) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.interval_s = interval_s
        self.count = self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            request = urllib.request.Request(self.url, headers={"Accept-Encoding": "gzip"})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    response.read()
                self.count += 1
            except OSError:
                self.failed += 1
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(35)


def run_case(broker: Broker, frames: list[list[bytes]], per_request: int, seconds: float):  # type: ignore[no-untyped-def]
    """(msg/s, broker CPU µs per message, errors) of one timed run."""
    cpu0 = broker.cpu_s()
    results = loadgen.run(broker.addr, frames, duration_s=seconds)
    cpu_s = broker.cpu_s() - cpu0
    messages = sum(r.requests - r.errors for r in results) * per_request
    wall = max(r.elapsed_s for r in results)
    rate = messages / wall if wall > 0 else 0.0
    return rate, cpu_s * 1e6 / max(messages, 1), sum(r.errors for r in results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench metrics-cost",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0, help="per case and broker")
    parser.add_argument("--scrape-interval", type=float, default=15.0, help="seconds")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="bench-metrics-cost-"))
    brokers: dict[bool, Broker] = {}
    scraper = None
    try:
        brokers[False] = Broker(root, port=PORTS[False], name="off")
        brokers[True] = Broker(
            root,
            port=PORTS[True],
            name="on",
            extra=f"metricsExporterType=PROM\nmetricsPromExporterPort={METRICS_PORT}\n",
        )
        scraper = Scraper(METRICS_PORT, args.scrape_interval)
        for broker in brokers.values():  # topics created, first segment touched
            loadgen.run(broker.addr, CASES[2][1](), duration_s=1)
            loadgen.run(broker.addr, CASES[0][1](), duration_s=1)
        print(
            f"metrics on: scraped every {args.scrape_interval:g} s; {args.rounds} rounds of "
            f"{args.seconds:g} s per case and broker, alternating",
            flush=True,
        )
        figures: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        for round_no in range(args.rounds):
            order = (False, True) if round_no % 2 == 0 else (True, False)
            for label, frames, per_request in CASES:
                for metrics_on in order:
                    rate, us, errors = run_case(
                        brokers[metrics_on], frames(), per_request, args.seconds
                    )
                    figures.setdefault((label, metrics_on), []).append((rate, us))
                    print(
                        f"[{round_no + 1}] {label:<36} metrics {'on ' if metrics_on else 'off'} "
                        f"{rate:>10,.0f} msg/s  broker CPU {us:6.1f} us/msg"
                        + (f"  errors {errors}" if errors else ""),
                        flush=True,
                    )
        print(f"\nscrapes: {scraper.count} answered, {scraper.failed} failed")
        print(f"{'medians':<38}{'off':>22}{'on':>22}   on/off rate, CPU per message")
        for label, _, _ in CASES:
            off = [statistics.median(x) for x in zip(*figures[label, False], strict=True)]
            on = [statistics.median(x) for x in zip(*figures[label, True], strict=True)]
            print(
                f"{label:<38}{off[0]:>10,.0f} /{off[1]:6.1f} us{on[0]:>10,.0f} /{on[1]:6.1f} us"
                f"   {on[0] / off[0]:.3f}, {on[1] / off[1]:.3f}",
                flush=True,
            )
    finally:
        if scraper is not None:
            scraper.stop()
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
