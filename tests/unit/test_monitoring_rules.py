"""The shipped alert rules (deploy/monitoring/rules/) pass ``promtool check rules`` and their
own ``promtool test rules`` cases, with the production ``for:`` durations, on synthetic series;
every layout's scrape config passes ``promtool check config``."""

from __future__ import annotations

import subprocess

import pytest

from tests.kits.promkit import NEEDS_PROMETHEUS, PROMTOOL, RULES

PROMETHEUS_CONFIGS = sorted((RULES.parent.parent / "prometheus").glob("*.yml"))


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=RULES.parent
    )


@NEEDS_PROMETHEUS
def test_alert_rules_pass_their_unit_tests() -> None:
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "rocketmq.rules.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


@NEEDS_PROMETHEUS
@pytest.mark.parametrize("config", PROMETHEUS_CONFIGS, ids=lambda p: p.stem)
def test_scrape_configs_are_valid(config) -> None:
    checked = promtool("check", "config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
