"""Scraping a real server's ``/metrics`` the way Prometheus does, and reading the samples."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request

import trio
from prometheus_client.parser import text_string_to_metric_families

from tests.kits.brokerkit import broker_conf, start_namesrv

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def fetch(port: int, path: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def scrape_text(port: int) -> str:
    status, text = await trio.to_thread.run_sync(fetch, port)
    assert status == 200, text
    return text


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def scrape(port: int) -> Samples:
    return parse(await scrape_text(port))


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The one sample of ``name`` whose labels include ``labels`` (None: no such sample)."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    assert len(found) <= 1, f"{name} {labels}: {len(found)} samples"
    return found[0] if found else None


# rocketmq-exporter's names and labels, kept for its dashboards though Prometheus' lint
# prefers snake_case labels and _total only on counters.
EXPORTER_PREFIXES = ("rocketmq_brokeruntime_", "rocketmq_group_", "rocketmq_broker_tps")


def promtool_check(text: str) -> str | None:
    """promtool's complaints about the exposition but those about rocketmq-exporter's own
    names, or None when promtool is not installed."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return None
    done = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    lines = (done.stdout + done.stderr).splitlines()
    return "\n".join(line for line in lines if not line.startswith(EXPORTER_PREFIXES))


def namesrv_with_metrics(processes, tmp_path):  # type: ignore[no-untyped-def]
    """A NameServer serving /metrics and a broker.conf that serves them too (not started):
    (namesrv, conf, namesrv metrics port). Both bind port 0 and report the port they got on
    their READY line (``ServerProcess.metrics_port``): no probe-then-bind race."""
    namesrv = start_namesrv(
        processes, tmp_path, metricsExporterType="PROM", metricsPromExporterPort=0
    )
    conf = broker_conf(
        tmp_path,
        namesrvAddr=namesrv.addr,
        metricsExporterType="PROM",
        metricsPromExporterPort=0,
    )
    assert namesrv.metrics_port is not None, "the NameServer's READY line has no metricsPort"
    return namesrv, conf, namesrv.metrics_port
