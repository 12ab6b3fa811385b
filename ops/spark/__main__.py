"""``mqreconcile``: the lag-reconciliation job and its apply step.

    mqreconcile run   --backup DIR [--backup DIR ...] --slave-store DIR --out DIR [--dry-run]
    mqreconcile apply --store DIR BUNDLE [--dry-run]

``run`` uses Spark: local[*] by default (``--master local[2]``), or the cluster given by
spark-submit when launched through it (see ops/spark/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ops.spark.apply import BundleError, apply_bundle
from ops.spark.segments import BackupError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqreconcile", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="report (and bundle) what a stopped slave lacks")
    run.add_argument(
        "--backup", type=Path, action="append", required=True, help="a commitlog folder"
    )
    run.add_argument("--slave-store", type=Path, required=True, help="the slave's storePathRootDir")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--dry-run", action="store_true", help="report only")
    run.add_argument("--master", help="Spark master (default local[*], or spark-submit's)")
    run.add_argument("--split-mb", type=int, default=256, help="bytes per task, in MiB")
    apply = sub.add_parser("apply", help="apply a repair bundle to a stopped slave's store")
    apply.add_argument("--store", type=Path, required=True)
    apply.add_argument("bundle", type=Path)
    apply.add_argument("--dry-run", action="store_true")
    apply.add_argument("--broker-conf", type=Path, help="the slave's broker.conf (store settings)")
    args = parser.parse_args(argv)
    try:
        if args.command == "apply":
            store_config = None
            if args.broker_conf:
                from broker.config import load_broker_config
                from remoting import properties

                _, store_config = load_broker_config(properties.loads(args.broker_conf.read_text()))
            result = apply_bundle(
                args.store, args.bundle, dry_run=args.dry_run, store_config=store_config
            )
            print(json.dumps(result, indent=2))
            return 0
        from ops.spark.reconcile import reconcile, summary
        from ops.spark.session import spark_session

        spark = spark_session(args.master)
        try:
            report = reconcile(
                spark,
                args.backup,
                args.slave_store,
                args.out,
                dry_run=args.dry_run,
                split_bytes=args.split_mb << 20,
            )
        finally:
            spark.stop()
        print(summary(report))
        print(f"\nreport: {args.out / 'report.json'}")
        return 0
    except (BackupError, BundleError) as exc:
        print(f"mqreconcile {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
