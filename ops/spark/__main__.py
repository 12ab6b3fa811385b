"""``mqreconcile``: the lag-reconciliation job and its apply step.

    mqreconcile run   --backup DIR [--backup DIR ...] --slave-store DIR --out DIR [--dry-run]
    mqreconcile apply --store DIR BUNDLE [--dry-run]

``run`` uses Spark: local[*] by default (``--master local[2]``, ``--master
spark://host:7077``), or the cluster given by spark-submit when launched through it (see
ops/spark/README.md). Its phase lines go to stderr with the seconds since the command started;
the report's summary goes to stdout.

Every path and number is checked here before Spark starts or a store is opened (a mistyped
``--store`` must not become a new, empty store); any error is one line and exit status 1.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import sys
from pathlib import Path

from broker.store.config import MessageStoreConfig, store_config
from deploy.cli import OneLineArgumentParser, fail, unexpected
from ops.spark.apply import BundleError, apply_bundle
from ops.spark.progress import Phase
from ops.spark.segments import BackupError, local_path, merge_backups
from remoting import properties
from remoting.runtime_config import RuntimeConfigError, load_overrides
from remoting.settings import ConfigError

PROG = "mqreconcile"
# Spark's master URLs (a typo here would otherwise surface only after the JVM started).
MASTER = re.compile(
    r"local(\[(\d+|\*)(,\d+)?\])?|spark://[\w.-]+:\d{1,5}(,[\w.-]+:\d{1,5})*|yarn|k8s://\S+"
)


class InputError(ValueError):
    """A path or value on the command line that cannot be used; the message says what to do."""


def _mib(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of MiB") from None
    if not 1 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..1048576 MiB")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="report (and bundle) what a stopped slave lacks")
    # Paths stay text until check_run: a file:// URI must not be folded by Path.
    run.add_argument(
        "--backup", action="append", required=True, help="a commitlog folder (or file:// URI)"
    )
    run.add_argument("--slave-store", required=True, help="the slave's storePathRootDir")
    run.add_argument("--out", required=True)
    run.add_argument("--dry-run", action="store_true", help="report only")
    run.add_argument("--master", help="Spark master (default local[*], or spark-submit's)")
    run.add_argument("--split-mb", type=_mib, default=256, help="bytes per task, in MiB")
    run.add_argument(
        "--spark-progress", action="store_true", help="Spark's own console progress bars too"
    )
    apply = sub.add_parser("apply", help="apply a repair bundle to a stopped slave's store")
    apply.add_argument("--store", type=Path, required=True)
    apply.add_argument("bundle", type=Path)
    apply.add_argument("--dry-run", action="store_true")
    apply.add_argument("--broker-conf", type=Path, help="the slave's broker.conf (store settings)")
    return parser


def existing_dir(path: Path, what: str) -> Path:
    if not path.is_dir():
        problem = "is not a directory" if path.exists() else "does not exist"
        raise InputError(f"{what} {path} {problem} (a typo? nothing was created)")
    return path


def lock_holder(store: Path) -> str | None:
    """Who holds the store's lock (a running broker), or None. Never creates the lock file."""
    try:
        fd = os.open(store / "lock", os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown pid"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def check_stopped(store: Path) -> None:
    holder = lock_holder(store)
    if holder is not None:
        raise InputError(
            f"the store {store} is in use by a running broker ({holder}): stop that broker (the "
            "slave) first, apply, then start it; it replicates on from the repaired offset"
        )


def _store_config(conf: Path | None) -> MessageStoreConfig | None:
    """The store's settings the slave starts with: its ``-c`` file with the keys
    updateBrokerConfig kept (``brokerConfigPath``) over it, read by the store's own config
    module. Only the store's keys matter here (segment sizes, paths)."""
    if conf is None:
        return None
    if not conf.is_file():
        raise InputError(f"--broker-conf {conf} is not a file")
    try:
        startup = properties.loads(conf.read_text())
        kept = startup.get("brokerConfigPath") or str(
            store_config(startup).config_dir / "broker.properties"
        )
        return store_config({**startup, **load_overrides(Path(kept))})
    except (ConfigError, RuntimeConfigError, properties.PropertiesError) as exc:
        raise InputError(f"--broker-conf {conf}: {exc}") from None


def apply(args: argparse.Namespace) -> int:
    store = existing_dir(args.store, "--store")
    existing_dir(args.bundle, "the bundle")
    check_stopped(store)
    result = apply_bundle(
        store, args.bundle, dry_run=args.dry_run, store_config=_store_config(args.broker_conf)
    )
    print(json.dumps(result, indent=2))
    return 0


def check_run(args: argparse.Namespace) -> None:
    """Everything ``run`` needs, checked before Spark starts (it takes seconds to start)."""
    if args.master is not None:
        check_master(args.master)
    args.backup = [existing_dir(local_path(b), "--backup") for b in args.backup]
    args.slave_store = existing_dir(local_path(args.slave_store), "--slave-store")
    args.out = local_path(args.out)
    if args.out.exists() and not args.out.is_dir():
        raise InputError(f"--out {args.out} is not a directory")
    if not args.out.parent.is_dir():
        raise InputError(f"--out {args.out}: its parent directory does not exist (a typo?)")
    check_stopped(args.slave_store)
    merge_backups(args.backup)  # refuses gaps, overlaps and foreign sizes
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError(
            "pyspark is not installed: pip install '.[spark]' (and Java 17+)"
        ) from None


def check_master(master: str) -> None:
    if not MASTER.fullmatch(master):
        raise InputError(
            f"--master {master!r}: expected local, local[N], local[*], spark://host:port, yarn "
            "or k8s://..."
        )


def run(args: argparse.Namespace, phase: Phase) -> int:
    check_run(args)
    from ops.spark.reconcile import reconcile, summary
    from ops.spark.session import spark_session

    under_submit = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    phase(f"starting Spark ({args.master or ('spark-submit' if under_submit else 'local[*]')})")
    spark = spark_session(args.master, progress=args.spark_progress)
    try:
        report = reconcile(
            spark,
            args.backup,
            args.slave_store,
            args.out,
            dry_run=args.dry_run,
            split_bytes=args.split_mb << 20,
            phase=phase,
        )
    finally:
        spark.stop()
    print(summary(report))
    print(f"\nreport: {args.out / 'report.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    phase = Phase()  # elapsed times count from here
    args = build_parser().parse_args(argv)
    prog = f"{PROG} {args.command}"
    try:
        return apply(args) if args.command == "apply" else run(args, phase)
    except (InputError, BackupError, BundleError, OSError) as exc:
        return fail(prog, exc)
    except KeyboardInterrupt:
        return fail(prog, "interrupted")
    except Exception as exc:
        from broker.store.mapped_file import StoreError

        if isinstance(exc, StoreError):
            return fail(prog, exc)
        return unexpected(prog, exc)


if __name__ == "__main__":
    sys.exit(main())
