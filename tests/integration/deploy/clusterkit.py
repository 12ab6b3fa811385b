"""Running mqcluster as an operator would, on free ports, for the deploy tests."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from deploy.manifest import load_manifest
from tests.kits.hakit import wait_until

REPO = Path(__file__).resolve().parents[3]


def mqcluster(*args: str, ok: bool | None = True) -> subprocess.CompletedProcess:
    """Run ``mqcluster``; assert it succeeded (or failed, ``ok=False``; None: either)."""
    done = subprocess.run(
        [sys.executable, "-m", "deploy.mqcluster", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )
    assert ok is None or (done.returncode == 0) == ok, done.stdout + done.stderr
    return done


def free_offset(layout: str) -> int:
    """A port offset that puts the whole layout on free ports below the ephemeral range."""
    ports = [p for spec in load_manifest(REPO / "deploy" / layout).processes for p in spec.ports]
    for _ in range(100):
        offset = (
            random.randint(12000, 31000 - max(ports))
            if max(ports) < 19000
            else random.randint(-9000, 0)
        )
        try:
            for port in ports:
                with socket.socket() as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        return offset
    raise RuntimeError("no free ports for the layout")


PORT_RETRIES = 5


@pytest.fixture
def layout_up(tmp_path):
    """``up(layout)`` starts a layout on free ports; everything started is taken down after.
    free_offset probes the ports and the processes bind them later, so another suite on the
    machine may take one in between: ``mqcluster up`` then fails naming the port in use and
    stops what it started, and the layout is started again on a new offset (tests/README.md,
    "Ports")."""
    started = []

    def up(layout: str) -> tuple[list[str], list[str]]:
        for attempt in range(PORT_RETRIES):
            base = tmp_path / (layout if attempt == 0 else f"{layout}-{attempt}")
            args = [f"deploy/{layout}", "--base-dir", str(base)]
            args += ["--port-offset", str(free_offset(layout))]
            done = mqcluster("up", *args, ok=None)
            if done.returncode == 0:
                started.append(args)
                return args, done.stdout.splitlines()
            if "in use" not in done.stderr or attempt == PORT_RETRIES - 1:
                raise AssertionError(done.stdout + done.stderr)
        raise AssertionError("unreachable")

    yield up
    for args in started:
        mqcluster("down", *args)


async def wait_status_shows_master(args: list[str], member: str) -> None:
    """Until ``mqcluster status`` lists ``member`` as its group's master with an epoch."""

    async def shown() -> bool:
        done = await trio.to_thread.run_sync(lambda: mqcluster("status", *args, ok=None))
        rows = [line for line in done.stdout.splitlines() if line.startswith(member)]
        return bool(rows) and "SYNC_MASTER (epoch" in rows[0]

    await wait_until(shown, 60, "mqcluster status to show the new master")
