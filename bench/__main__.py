"""``python -m bench [name ...] [--option ...]``: run every benchmark module (or the named ones:
``metrics-cost`` is bench/bench_metrics_cost.py), each in its own interpreter so one's warm
caches and threads don't colour the next one's figures. Options after the names go to each
named module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    first_option = next((i for i, arg in enumerate(argv) if arg.startswith("-")), len(argv))
    names, options = argv[:first_option], argv[first_option:]
    names = names or sorted(p.stem for p in HERE.glob("bench_*.py"))
    failed = []
    for name in names:
        name = name.replace("-", "_")
        module = name if name.startswith("bench_") else f"bench_{name}"
        print(f"\n=== {module} ===", flush=True)
        code = subprocess.call([sys.executable, "-m", f"bench.{module}", *options], cwd=HERE.parent)
        if code:
            failed.append(module)
    if failed:
        print(f"\nbenchmarks that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
