"""A real Prometheus (Debian's ``prometheus`` package) for a test: scraping the test's servers
every second and evaluating the shipped alert rules, with their ``for:`` durations and the lag
threshold shortened so an alert fires within seconds."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.harness import free_port_block

RULES = REPO_ROOT / "deploy" / "monitoring" / "rules" / "rocketmq.rules.yml"
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
NEEDS_PROMETHEUS = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="needs Debian's prometheus package (prometheus, promtool): `make install` as root "
    "installs it",
)


def shortened_rules(lag_threshold_s: int, for_s: int) -> dict:
    """The shipped rules, every ``for:`` set to ``for_s`` seconds and the lag alert's
    threshold (300 s) to ``lag_threshold_s``: the rest of each rule is what operators get."""
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = f"{for_s}s"
            if rule.get("alert") == "RocketMQConsumerLagHigh":
                assert rule["expr"].count("> 300") == 1, rule["expr"]
                rule["expr"] = rule["expr"].replace("> 300", f"> {lag_threshold_s}")
    return rules


class Prometheus:
    def __init__(self, workdir: Path, rules: dict, jobs: dict[str, list[str]]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "rules.yml").write_text(yaml.safe_dump(rules))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": ["rules.yml"],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": targets}]}
                for job, targets in jobs.items()
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.port = free_port_block(1)
        self.log = (workdir / "prometheus.log").open("wb")
        assert PROMETHEUS is not None
        self.proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )

    def get(self, path: str) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())

    def ready(self) -> bool:
        assert self.proc.poll() is None, "prometheus exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5):
                return True
        except OSError:
            return False

    def alerts(self) -> list[dict]:
        return self.get("/api/v1/alerts")["data"]["alerts"]

    def query(self, expr: str) -> list[dict]:
        return self.get(f"/api/v1/query?query={quote(expr)}")["data"]["result"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@contextmanager
def running_prometheus(
    workdir: Path, rules: dict, jobs: dict[str, list[str]]
) -> Iterator[Prometheus]:
    server = Prometheus(workdir, rules, jobs)
    try:
        yield server
    finally:
        server.stop()
