"""The metrics endpoint's cost (docs/monitoring.md "Figures"). Printed, never asserted.

Scrape at scale: a broker with TOPICS topics x 8 queues, one message stored in each queue,
and GROUPS groups, each committed at offset 0 on every queue of TOPICS_PER_GROUP topics (so
every pair has lag and its store time is looked up): series count, the broker's CPU per
scrape (its idle CPU subtracted: on a shared machine the wall times below are inflated by
whatever else runs, the CPU much less), scrape time over HTTP (median and worst of SCRAPES,
gzip as Prometheus asks), and the event loop's worst lag.
Run for 20 topics a group (1,000 group/topic pairs) and for every topic (50,000 pairs).
BENCH_METRICS_BASE=<a tree of an older commit> alternates each scale's run between that tree's
broker and this one's (same bench, same machine, one run), for before/after figures;
BENCH_METRICS_INTERVAL_S spaces the scrapes as Prometheus would (the snapshot made after
one scrape is what the next one serves).
BENCH_METRICS_PER_GROUP picks the scales (topics a group consumes, comma-separated).
Throughput with metrics on and off is bench/bench_metrics_cost.py's (python -m bench metrics-cost).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from bench import loadgen
from bench.bench_broker import QUEUES, Broker, send_frame
from broker.offsets import ConsumerOffsetManager
from broker.persist import JsonConfigFile
from broker.topic_config import TopicConfigManager
from remoting.body import TopicConfig

TOPICS = int(os.environ.get("BENCH_METRICS_TOPICS", "1000"))
GROUPS = int(os.environ.get("BENCH_METRICS_GROUPS", "50"))
SCRAPES = int(os.environ.get("BENCH_METRICS_SCRAPES", "20"))
ROUNDS = int(os.environ.get("BENCH_METRICS_ROUNDS", "2"))
STEPWATCH = Path(__file__).resolve().parent / "stepwatch"
INTERVAL_S = float(os.environ.get("BENCH_METRICS_INTERVAL_S", "0"))
BASE = os.environ.get("BENCH_METRICS_BASE", "")
# topics each group consumes, one scale run each (default: 20, then every topic)
PER_GROUP = [int(n) for n in os.environ.get("BENCH_METRICS_PER_GROUP", f"20,{TOPICS}").split(",")]
METRICS_PORT = 31557


def prepare_store(root: Path, name: str, topics_per_group: int) -> None:
    """topics.json and consumerOffset.json as the broker keeps them, written before it starts."""
    config_dir = root / f"store-{name}" / "config"
    config_dir.mkdir(parents=True)
    topics = TopicConfigManager(
        JsonConfigFile(config_dir / "topics.json"),
        cluster_name="DefaultCluster",
        broker_name="bench",
    )
    for t in range(TOPICS):
        topics.table[f"T{t}"] = TopicConfig(
            topic_name=f"T{t}", read_queue_nums=QUEUES, write_queue_nums=QUEUES
        )
    topics.loaded = True
    topics.persist_sync()
    offsets = ConsumerOffsetManager(JsonConfigFile(config_dir / "consumerOffset.json"))
    for g in range(GROUPS):
        for k in range(topics_per_group):
            topic = f"T{(g * topics_per_group + k) % TOPICS}"
            for q in range(QUEUES):
                offsets.commit(f"G{g}", topic, q, 0)
    offsets.persist_sync()


def scrape(port: int) -> tuple[float, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers={"Accept-Encoding": "gzip"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        body = response.read()
        zipped = response.headers.get("Content-Encoding") == "gzip"
    elapsed = time.perf_counter() - started
    return elapsed, gzip.decompress(body) if zipped else body


def sample_value(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return float("nan")


@contextlib.contextmanager
def tree(path: str):  # type: ignore[no-untyped-def]
    """Brokers started inside run that tree's code (``python -m broker`` from the cwd)."""
    before = os.getcwd()
    os.chdir(path or before)
    try:
        yield
    finally:
        os.chdir(before)


def scale(topics_per_group: int, label: str = "") -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
    try:
        prepare_store(root, "scale", topics_per_group)
        # 8,000 ConsumeQueues: at RocketMQ's 6 MB a file they would take 48 GB of disk
        extra = (
            f"metricsExporterType=PROM\nmetricsPromExporterPort={METRICS_PORT}\n"
            "mappedFileSizeConsumeQueue=120000\nmaxHashSlotNum=50000\nmaxIndexNum=200000\n"
            # a shared machine's disk may be past the 90 % at which a broker refuses writes
            "diskSpaceWarningLevelRatio=0.99\ndiskSpaceCleanForciblyRatio=0.99\n"
        )
        steps_file = root / "steps.json"
        os.environ["ROCKETMQ_BENCH_STEPS_FILE"] = str(steps_file)
        os.environ["PYTHONPATH"] = f"{STEPWATCH}{os.pathsep}{os.getcwd()}"
        try:
            broker = Broker(root, extra=extra, name="scale")
        finally:
            del os.environ["ROCKETMQ_BENCH_STEPS_FILE"], os.environ["PYTHONPATH"]
        try:
            frames = [[send_frame(f"T{t}", q) for t in range(TOPICS) for q in range(QUEUES)]]
            loadgen.run(
                broker.addr, frames, duration_s=600, max_requests=TOPICS * QUEUES, python=True
            )
            scrape(METRICS_PORT)  # first render fills the label caches
            steps_file.unlink(missing_ok=True)  # start-up's steps (recovery, loading) aside
            idle_cpu_per_s = idle_cpu(broker)
            times, lags, ages = [], [], []
            cpu0, t0 = broker.cpu_s(), time.perf_counter()
            for _ in range(SCRAPES):
                if INTERVAL_S:
                    time.sleep(INTERVAL_S)
                elapsed, body = scrape(METRICS_PORT)
                times.append(elapsed)
                lags.append(sample_value(body.decode(), "rocketmq_event_loop_lag_seconds"))
                ages.append(sample_value(body.decode(), "rocketmq_metrics_snapshot_age_seconds"))
            busy = broker.cpu_s() - cpu0 - idle_cpu_per_s * (time.perf_counter() - t0)
            took = sample_value(body.decode(), "rocketmq_metrics_snapshot_duration_seconds")
            steps = json.loads(steps_file.read_text()) if steps_file.exists() else []
            text = body.decode()
            series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
            pairs = GROUPS * min(topics_per_group, TOPICS)
            print(
                f"{label}{TOPICS} topics x {QUEUES} queues, {GROUPS} groups x {topics_per_group} topics "
                f"({pairs:,} group/topic pairs): {series:,} series, {len(text) / 2**20:.1f} MiB "
                f"of text; broker CPU per scrape {busy / SCRAPES * 1000:.0f} ms (idle CPU "
                f"subtracted); scrape median {statistics.median(times) * 1000:.0f} ms, worst "
                f"{max(times) * 1000:.0f} ms; event loop worst lag "
                f"{max(lags[1:] or lags) * 1000:.0f} ms while scraped, "
                f"{lags[0] * 1000:.0f} ms in the 10 s idle before; snapshot took "
                f"{took * 1000:.0f} ms, served at ages up to {max(ages[1:] or ages) * 1000:.0f} ms; "
                "longest loop holds (loop thread CPU): "
                + ", ".join(
                    f"{cpu * 1000:.0f} ms {name.rsplit('.', 2)[-2]}" for cpu, name in steps[:6]
                ),
                flush=True,
            )
        finally:
            broker.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def idle_cpu(broker: Broker, seconds: float = 10.0) -> float:
    """The broker's CPU seconds per second with nothing to do (its flush and housekeeping
    services), to be taken off what the scrapes cost."""
    cpu0, t0 = broker.cpu_s(), time.perf_counter()
    time.sleep(seconds)
    return (broker.cpu_s() - cpu0) / (time.perf_counter() - t0)


def compare_scale(topics_per_group: int) -> None:
    """This tree's broker and BASE's, alternating, ROUNDS times."""
    for _ in range(ROUNDS):
        for label, path in (("before: ", BASE), ("after:  ", "")):
            with tree(path):
                scale(topics_per_group, label)


def main() -> None:
    if BASE:
        for per_group in PER_GROUP:
            compare_scale(per_group)
        return
    for per_group in PER_GROUP:
        scale(per_group)


if __name__ == "__main__":
    main()
