"""``python -m tests.fuzz``: a fuzz campaign as long as asked (``make fuzz``), or one case's
bytes (``--replay``).

    python -m tests.fuzz --minutes 30 --seed 7 [--dir /tmp/fuzz-7]
    python -m tests.fuzz --replay w3/1234/b --plan /tmp/fuzz-7/plan.json

Prints progress (frames/s, connections, RSS and fds of each server) every minute, then the
report; exits 1 if anything was found, with the suspect cases as hex. The world directory
(stores, logs, plan.json) is kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import trio

from tests.fuzz.campaign import Settings, describe, plan_from, run_campaign, suspects
from tests.fuzz.cases import valid_case_id
from tests.fuzz.world import World
from tests.harness import ProcessPool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=3, help="random-case workers per server")
    parser.add_argument("--dir", type=Path, help="the world directory (default: a new temp one)")
    parser.add_argument("--replay", help="print this case's bytes (needs --plan)")
    parser.add_argument("--plan", type=Path, help="plan.json of the campaign to replay from")
    args = parser.parse_args(argv)
    if args.replay:
        if args.plan is None:
            parser.error("--replay needs --plan (the campaign's plan.json)")
        if not valid_case_id(args.replay):
            parser.error(
                f"--replay {args.replay!r}: a case id is w<worker>/<n>/<b|n> or sweep/<b|n>/<i>"
            )
        print(describe(plan_from(json.loads(args.plan.read_text())), args.replay, limit=1 << 30))
        return 0
    root = args.dir or Path(tempfile.mkdtemp(prefix=f"fuzz-{args.seed}-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"fuzz campaign: seed {args.seed}, {args.minutes:g} min, world {root}", flush=True)
    settings = Settings(seconds=args.minutes * 60, seed=args.seed, workers=args.workers)
    pool = ProcessPool(root / "logs")
    try:
        report = trio.run(run_campaign, World(root, pool), settings, _say)
    finally:
        pool.stop_all()
    for line in report.lines():
        print(line)
    if report.findings:
        plan = plan_from(json.loads((root / "plan.json").read_text()))
        print(f"suspect cases (replay: --replay ID --plan {root / 'plan.json'}):")
        for text in suspects(plan, report):
            print(text)
        return 1
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
