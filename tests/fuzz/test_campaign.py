"""The fuzz campaign, bounded for CI: ~20 s of hostile traffic against a real ``mqnamesrv`` and
``mqbroker`` (tests/fuzz/campaign.py), then the whole verdict: no crash, no hang, no traceback
or ERROR logged, nothing touched outside the stores, sockets and heap back near baseline, and
every acknowledged message back after kill -9. ``make fuzz`` runs the same for as long as
asked; FUZZ_SEED picks another seed here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fuzz.campaign import Settings, plan_from, run_campaign, suspects
from tests.fuzz.world import World
from tests.harness import ProcessPool

SECONDS = 20.0
SEED = int(os.environ.get("FUZZ_SEED", "22"))


@pytest.mark.timeout(240)
async def test_a_bounded_campaign_finds_nothing(tmp_path: Path) -> None:
    root = tmp_path / "world"
    world = World(root, ProcessPool(root / "logs"))
    try:
        settings = Settings(seconds=SECONDS, seed=SEED, progress_every_s=3600)
        report = await run_campaign(world, settings, say=lambda _: None)
    finally:
        world.pool.stop_all()
    lines = report.lines()
    if report.findings:
        lines += suspects(plan_from(json.loads((root / "plan.json").read_text())), report)
    detail = "\n".join(lines)
    assert not report.findings, detail
    # it did what it says: hostile frames of every kind, good sends through them, recovered
    assert report.tally.frames_total > 2000, detail
    assert {"field", "bytes", "body", "header-json", "header-rocketmq"} <= set(report.tally.frames)
    assert {"prefixes", "huge-partial", "slow-loris"} <= set(report.tally.structural), detail
    assert report.good_recovered == len(report.tally.good_acked) > 100, detail
    assert report.fuzz_recovered == len(report.tally.fuzz_acked) > 0, detail
