"""Every layout's processes serve /metrics where deploy/monitoring/prometheus/<layout>.yml
scrapes them: mqcluster sets metricsPromExporterPort to listenPort + 1 (NameServer) and + 2
(broker)."""

from __future__ import annotations

import pytest
import yaml

from deploy.manifest import load_manifest
from tests.integration.deploy.clusterkit import REPO
from tests.kits.metricskit import fetch

LAYOUTS = ("single", "2m-2s-async", "2m-2s-sync")
JOBS = {"namesrv": "rocketmq-namesrv", "broker": "rocketmq-broker"}


def scrape_targets(layout: str) -> dict[str, list[str]]:
    config = yaml.safe_load(
        (REPO / "deploy" / "monitoring" / "prometheus" / f"{layout}.yml").read_text()
    )
    return {
        job["job_name"]: [t for static in job["static_configs"] for t in static["targets"]]
        for job in config["scrape_configs"]
    }


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scrape_config_targets_every_process_of_the_layout(layout) -> None:
    manifest = load_manifest(REPO / "deploy" / layout)
    expected: dict[str, list[str]] = {}
    for spec in manifest.processes:
        expected.setdefault(JOBS[spec.kind], []).append(f"127.0.0.1:{spec.metrics_port}")
        conf = spec.conf.read_text()
        assert "metricsExporterType=PROM" in conf, spec.conf
    assert scrape_targets(layout) == expected


def test_a_layout_serves_metrics_on_the_scraped_ports(layout_up) -> None:
    args, _ = layout_up("single")
    offset = int(args[args.index("--port-offset") + 1])
    manifest = load_manifest(REPO / "deploy" / "single").shifted(offset)
    for spec in manifest.processes:
        status, text = fetch(spec.metrics_port)
        assert status == 200
        name = "rocketmq_namesrv_topics" if spec.kind == "namesrv" else "rocketmq_broker_tps"
        assert f"\n{name}" in text, spec.name
