"""The systemd unit templates pass ``systemd-analyze verify`` (pointed at this checkout's
executables instead of /opt/rocketmq-trio)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNITS = Path(__file__).resolve().parents[3] / "deploy" / "systemd"

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


def render(tmp_path: Path, name: str, target: str | None = None) -> Path:
    text = (UNITS / name).read_text()
    text = text.replace("/opt/rocketmq-trio/bin", str(Path(sys.executable).parent))
    text = text.replace("User=rocketmq", "User=root").replace("Group=rocketmq", "Group=root")
    path = tmp_path / (target or name)
    path.write_text(text)
    return path


def verify(*units: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["systemd-analyze", "verify", *map(str, units)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_units_verify_cleanly(tmp_path) -> None:
    namesrv = render(tmp_path, "mqnamesrv.service")
    broker = render(tmp_path, "mqbroker@.service", "mqbroker@broker-a-m.service")
    done = verify(namesrv, broker)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_verify_would_catch_a_broken_unit(tmp_path) -> None:
    broken = render(tmp_path, "mqnamesrv.service")
    broken.write_text(broken.read_text().replace("KillSignal=SIGTERM", "KillSignal=SIGNOPE"))
    assert "SIGNOPE" in verify(broken).stderr
