"""Bytecodes and Python calls per request, by function, of a running broker's event loop.

``python -m bench.optrace run -c broker.conf [--out FILE]`` starts ``mqbroker`` with a per-opcode
tracer on its main thread (the event loop; the flush, warmer and sender threads are not
traced). ``kill -USR1`` clears the counts, ``kill -USR2`` writes them to FILE as JSON. Drive it
with any load between the two signals (the peers' ``ours_bench.py --namesrv ... --broker-pid
PID``, or bench_broker's shapes), then ``python -m bench.optrace report FILE REQUESTS`` prints
the counts per request. The counts are deterministic where CPU figures on these machines move
2x from hour to hour, so they say what a change did to the interpreter's share; what that is
worth in CPU is still measured beside the start tree (docs/scaling.md, "thinround" and
"pullthin"). The tracer slows the broker ~50x: rounds grow larger under it than at full speed,
so per-round costs read a little lower per request than they are."""

from __future__ import annotations

import collections
import json
import os
import runpy
import signal
import sys
from types import FrameType
from typing import Any

Key = tuple[str, str]


class OpcodeCounter:
    """Per (file, function): opcodes run and calls made, on the thread that installed it."""

    def __init__(self) -> None:
        self.ops: collections.Counter[Key] = collections.Counter()
        self.calls: collections.Counter[Key] = collections.Counter()

    def trace(self, frame: FrameType, event: str, _arg: Any) -> Any:
        code = frame.f_code
        if event == "call":
            frame.f_trace_opcodes = True
            self.calls[(code.co_filename, code.co_name)] += 1
        elif event == "opcode":
            self.ops[(code.co_filename, code.co_name)] += 1
        return self.trace

    def clear(self, *_: object) -> None:
        self.ops.clear()
        self.calls.clear()

    def snapshot(self) -> dict[str, list[list[Any]]]:
        # The handler runs traced on the same thread: stop counting while copying, or the
        # copy would count itself and the Counter change size under the iteration.
        sys.settrace(None)
        try:
            ops, calls = dict(self.ops), dict(self.calls)
        finally:
            sys.settrace(self.trace)
        return {
            "ops": [[f, n, v] for (f, n), v in ops.items()],
            "calls": [[f, n, v] for (f, n), v in calls.items()],
        }


def run(argv: list[str]) -> None:
    out = "optrace.json"
    if "--out" in argv:
        at = argv.index("--out")
        out = argv[at + 1]
        del argv[at : at + 2]
    counter = OpcodeCounter()

    def dump(*_: object) -> None:
        with open(out, "w") as f:
            json.dump(counter.snapshot(), f)

    signal.signal(signal.SIGUSR1, counter.clear)
    signal.signal(signal.SIGUSR2, dump)
    sys.settrace(counter.trace)
    sys.argv = ["mqbroker", *argv]
    runpy.run_module("broker", run_name="__main__")


def report(path: str, requests: float, top: int = 40) -> str:
    with open(path) as f:
        data = json.load(f)
    calls = {(f, n): v for f, n, v in data["calls"]}
    ops = sorted(data["ops"], key=lambda row: -row[2])
    lines = [
        f"bytecodes per request {sum(v for _, _, v in ops) / requests:.1f}, "
        f"Python calls per request {sum(calls.values()) / requests:.2f}"
    ]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    for f, n, v in ops[:top]:
        short = f.split("site-packages/")[-1].removeprefix(root)
        lines.append(
            f"{v / requests:8.2f} ops {calls.get((f, n), 0) / requests:6.3f} calls  {short}:{n}"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        run(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        print(report(sys.argv[2], float(sys.argv[3])))
    else:
        sys.exit(
            "usage: python -m bench.optrace run -c broker.conf [--out FILE] | report FILE REQUESTS"
        )


if __name__ == "__main__":
    main()
