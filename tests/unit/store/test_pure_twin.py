"""The store writes the same bytes with the native twins (remoting/native/) as with the pure-Python code, and
recovers them the same way: the end-to-end check behind the per-function property tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.nativekit import needs_native


def run_child(root: Path, *, pure: bool) -> dict:
    env = {**os.environ, "ROCKETMQ_TRIO_PURE": "1" if pure else "0"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.store.pure_twin_child", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


@needs_native
def test_native_and_pure_stores_write_and_recover_the_same_bytes(tmp_path: Path) -> None:
    fast = run_child(tmp_path / "native", pure=False)
    slow = run_child(tmp_path / "pure", pure=True)
    assert (fast["native"], slow["native"]) == (True, False)
    assert len(fast["clean"]) > 10  # commit log, queues of four topics, index
    assert fast["clean"] == slow["clean"]
    assert fast["recovered"] == slow["recovered"]
    assert fast["recovered"] == fast["clean"]  # recovery rebuilt the queues byte for byte
