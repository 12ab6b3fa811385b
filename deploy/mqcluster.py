"""``mqcluster up|down|status|logs LAYOUT [--base-dir DIR]``: run a layout from ``deploy/`` (a
folder with cluster.toml) as local daemons. Data, logs, pid files and the effective configs go
to ``--base-dir`` (default ``.run/<layout>``). ``up --foreground`` stays attached and stops the
whole layout on Ctrl-C, on SIGTERM, or when any of its processes exits (what ``make run`` does).

Whatever ends ``up`` before it is done (SIGINT, SIGTERM, SIGHUP, an error, a process that fails
to start) stops what it had started. Errors are one line on stderr, exit status 1."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from deploy.cli import OneLineArgumentParser, fail, unexpected
from deploy.cluster import Cluster
from deploy.daemon import ClusterError, Interrupted
from deploy.manifest import ManifestError, load_manifest
from deploy.promote import promote

PROG = "mqcluster"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
BANNER = (
    "running in the foreground: Ctrl-C (or SIGTERM) stops the whole layout, and so does any of "
    "its processes exiting"
)


def table(rows: list[dict[str, object]]) -> str:
    if not rows:
        return ""
    headers = list(rows[0])
    cells = [headers] + [[str(r[h]) for h in headers] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def catch_stop_signals() -> threading.Event:
    """SIGINT, SIGTERM and SIGHUP set the returned event instead of ending the process at once;
    every wait of Cluster checks it, so cleanup runs in order and is never cut short."""
    stop = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: stop.set())
    return stop


def wait_in_foreground(cluster: Cluster) -> None:
    print(BANNER, flush=True)
    while not cluster.stop.wait(1.0):
        if len(cluster.running()) < len(cluster.manifest.processes):
            dead = {p.name for p in cluster.manifest.processes} - set(cluster.running())
            print(f"process(es) gone: {', '.join(sorted(dead))}; stopping the rest", flush=True)
            return


def example(cluster: Cluster) -> str:
    ns = cluster.manifest.namesrv_addr
    script = Path(sys.executable).parent / "mqadmin"
    mqadmin = str(script) if script.exists() else f"{sys.executable} -m client.mqadmin"
    return (
        f"try it:  {mqadmin} sendMessage -n '{ns}' -t Hello -p 'hi there'\n"
        f"         {mqadmin} consumeMessage -n '{ns}' -t Hello"
    )


def _lines(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give at least 1 line")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
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
    parser.add_argument("-n", "--lines", type=_lines, default=40, help="logs: lines per process")
    return parser


def up(cluster: Cluster, foreground: bool) -> None:
    try:
        cluster.up()
        if cluster.stop.is_set():  # a signal after the last wait: `up` did not finish for it
            raise Interrupted("interrupted: stopped what was started")
        print(example(cluster), flush=True)
        if foreground:
            wait_in_foreground(cluster)
    finally:
        if foreground or cluster.stop.is_set():
            cluster.down()


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    if args.command == "up":
        up(cluster, args.foreground)
    elif args.command == "down":
        if not cluster.down():
            print(f"nothing of {cluster.manifest.name} is running in {cluster.base}")
    elif args.command == "status":
        rows = cluster.status()
        print(json.dumps(rows, indent=2) if args.json else table(rows))
    elif args.command in ("start", "stop", "promote"):
        if not args.name:
            raise ClusterError("name a process (or, for promote, a brokerName)")
        if args.command == "start":
            cluster.start_one(args.name)
        elif args.command == "stop":
            cluster.stop_one(args.name)
        else:
            promote(cluster, args.name, force=args.force)
    else:
        for spec in cluster.manifest.start_order():
            if args.name in (None, spec.name):
                daemons = cluster.daemons
                log = daemons.tail(spec, args.lines, out=False)
                print(f"==> {daemons.log_path(spec)} <==\n{log}\n")
                print(f"==> {daemons.out_path(spec)} <==\n{daemons.tail(spec, args.lines)}\n")


def main(argv: list[str] | None = None) -> int:
    stop = catch_stop_signals()
    args = build_parser().parse_intermixed_args(argv)
    prog = f"{PROG} {args.command}"
    try:
        manifest = load_manifest(args.layout).shifted(args.port_offset)
    except ManifestError as exc:
        return fail(PROG, exc)
    except OSError as exc:
        return fail(PROG, f"{args.layout}: {exc.strerror or exc}")
    default_base = Path(".run") / (
        manifest.name + (f"+{args.port_offset}" if args.port_offset else "")
    )
    try:
        cluster = Cluster(manifest, args.base_dir or default_base, out=_say, stop=stop)
        run(cluster, args)
    except ClusterError as exc:
        if exc.detail:
            print(exc.detail, flush=True)
        return fail(prog, exc)
    except (ManifestError, OSError) as exc:
        return fail(prog, exc)
    except Exception as exc:
        return unexpected(prog, exc)
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
