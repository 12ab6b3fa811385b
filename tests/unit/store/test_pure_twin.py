"""The store writes the same bytes whichever native modules run (the record codec's,
remoting._codec; the store's, broker.store._native; both; neither) and recovers them the same
way: the end-to-end check behind the per-function twin tests, and proof that each module is
used or left out on its own switch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nativekit import needs_codec, needs_store_native

SWITCHES = ("ROCKETMQ_TRIO_PURE", "ROCKETMQ_TRIO_PURE_CODEC", "ROCKETMQ_TRIO_PURE_STORE")


def run_child(root: Path, **switches: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.store.pure_twin_child", str(root)],
        env={**env, **switches},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Both native modules: what every other combination must match."""
    return run_child(tmp_path_factory.mktemp("native"))


@needs_codec
@needs_store_native
@pytest.mark.parametrize(
    ("switches", "loaded"),
    [
        ({"ROCKETMQ_TRIO_PURE": "1"}, {"codec": False, "store": False}),
        ({"ROCKETMQ_TRIO_PURE_STORE": "1"}, {"codec": True, "store": False}),
        ({"ROCKETMQ_TRIO_PURE_CODEC": "1"}, {"codec": False, "store": True}),
    ],
    ids=["pure", "codec-only", "store-only"],
)
def test_native_and_pure_stores_write_and_recover_the_same_bytes(
    fast: dict, tmp_path: Path, switches: dict[str, str], loaded: dict[str, bool]
) -> None:
    other = run_child(tmp_path / "other", **switches)
    assert fast["native"] == {"codec": True, "store": True}
    assert other["native"] == loaded
    assert len(fast["clean"]) > 10  # commit log, queues of four topics, index
    assert fast["clean"] == other["clean"]
    assert fast["recovered"] == other["recovered"]
    assert fast["recovered"] == fast["clean"]  # recovery rebuilt the queues byte for byte
