"""Running mqcluster as an operator would, on free ports, for the deploy tests."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.manifest import load_manifest

REPO = Path(__file__).resolve().parents[3]


def mqcluster(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "deploy.mqcluster", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )
    assert (done.returncode == 0) == ok, done.stdout + done.stderr
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


@pytest.fixture
def layout_up(tmp_path):
    started = []

    def up(layout: str) -> tuple[list[str], list[str]]:
        args = [
            f"deploy/{layout}",
            "--base-dir",
            str(tmp_path / layout),
            "--port-offset",
            str(free_offset(layout)),
        ]
        started.append(args)
        out = mqcluster("up", *args).stdout
        return args, out.splitlines()

    yield up
    for args in started:
        mqcluster("down", *args)
