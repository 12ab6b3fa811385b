"""``mqcluster up|down|status|logs LAYOUT [--base-dir DIR]``: run a layout from ``deploy/`` (a
folder with cluster.toml) as local daemons. Data, logs, pid files and the effective configs go
to ``--base-dir`` (default ``.run/<layout>``). ``up --foreground`` stays attached and stops the
cluster on Ctrl-C (what ``make run`` does)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from deploy.cluster import Cluster, ClusterError
from deploy.manifest import ManifestError, load_manifest


def table(rows: list[dict[str, object]]) -> str:
    if not rows:
        return ""
    headers = list(rows[0])
    cells = [headers] + [[str(r[h]) for h in headers] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def wait_for_signal(cluster: Cluster) -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print("running in the foreground: Ctrl-C stops the cluster", flush=True)
    while not stop.wait(1.0):
        if len(cluster.running()) < len(cluster.manifest.processes):
            dead = {p.name for p in cluster.manifest.processes} - set(cluster.running())
            print(f"process(es) gone: {', '.join(sorted(dead))}; stopping the rest", flush=True)
            break


def example(cluster: Cluster) -> str:
    ns = cluster.manifest.namesrv_addr
    script = Path(sys.executable).parent / "mqadmin"
    mqadmin = str(script) if script.exists() else f"{sys.executable} -m client.mqadmin"
    return (
        f"try it:  {mqadmin} sendMessage -n '{ns}' -t Hello -p 'hi there'\n"
        f"         {mqadmin} consumeMessage -n '{ns}' -t Hello"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqcluster", description=__doc__.split("\n")[0])
    parser.add_argument(
        "command", choices=["up", "down", "status", "logs", "start", "stop", "promote"]
    )
    parser.add_argument("layout", type=Path, help="a layout folder, e.g. deploy/single")
    parser.add_argument("name", nargs="?", help="logs/start/stop: a process; promote: a brokerName")
    parser.add_argument("--force", action="store_true", help="promote: stop a live master first")
    parser.add_argument("--base-dir", type=Path)
    parser.add_argument("--foreground", action="store_true", help="up: stay attached; Ctrl-C stops")
    parser.add_argument("--json", action="store_true", help="status: machine-readable")
    parser.add_argument(
        "--port-offset", type=int, default=0, help="move every port by N (two copies side by side)"
    )
    parser.add_argument("-n", "--lines", type=int, default=40, help="logs: lines per process")
    args = parser.parse_intermixed_args(argv)
    try:
        manifest = load_manifest(args.layout).shifted(args.port_offset)
    except ManifestError as exc:
        print(f"mqcluster: {exc}", file=sys.stderr)
        return 1
    default_base = Path(".run") / (
        manifest.name + (f"+{args.port_offset}" if args.port_offset else "")
    )
    cluster = Cluster(manifest, args.base_dir or default_base, out=_say)
    try:
        if args.command == "up":
            cluster.up()
            print(example(cluster), flush=True)
            if args.foreground:
                try:
                    wait_for_signal(cluster)
                finally:
                    cluster.down()
        elif args.command == "down":
            if not cluster.down():
                print(f"nothing of {manifest.name} is running in {cluster.base}")
        elif args.command == "status":
            rows = cluster.status()
            print(json.dumps(rows, indent=2) if args.json else table(rows))
        elif args.command in ("start", "stop", "promote"):
            if not args.name:
                print(f"mqcluster {args.command}: name a process (or brokerName)", file=sys.stderr)
                return 1
            if args.command == "start":
                cluster.start_one(args.name)
            elif args.command == "stop":
                cluster.stop_one(args.name)
            else:
                cluster.promote(args.name, force=args.force)
        else:
            for spec in cluster.manifest.start_order():
                if args.name in (None, spec.name):
                    print(f"==> {cluster.log_path(spec)} <==\n{cluster.tail(spec, args.lines)}\n")
    except ClusterError as exc:
        print(f"mqcluster {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
