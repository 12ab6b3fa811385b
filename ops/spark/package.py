"""The job's Python code as one zip for a cluster's executors (``--py-files``, or added by the
driver itself when it connects to a cluster directly): the packages the job imports, as source.
A .whl on ``--py-files`` is not importable; a zip is. Without their native twins the modules
run their pure-Python paths, which read the same bytes.

    python -m ops.spark.package rocketmq-trio.zip
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ops", "remoting", "broker", "deploy")  # what ops.spark imports


def build_zip(target: Path, root: Path = ROOT) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*")):
                if path.suffix in (".py", ".properties") and "__pycache__" not in path.parts:
                    archive.write(path, path.relative_to(root).as_posix())
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m ops.spark.package TARGET.zip")
    print(build_zip(Path(sys.argv[1])))
