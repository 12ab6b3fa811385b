"""Running the operator command lines as a user would, and what a refusal must look like: exit
status 1, one line on stderr, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from remoting.settings import bad_value

REPO = Path(__file__).resolve().parents[2]


def run_cli(module: str, *args: str, env: dict[str, str] | None = None, cwd: Path = REPO):
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=env,
    )


def assert_refused(done: subprocess.CompletedProcess, *expected: str) -> str:
    """The one stderr line of a refusal, which must contain each of ``expected``."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def echoed(key: str, value: object) -> str:
    """How a refusal names ``key=value``: in full, or by its first 80 characters and length when
    longer (a test's tmp_path under pytest-xdist's worker directories often is)."""
    shown = str(bad_value(key, value, "")).removeprefix("bad value for ")
    return shown.removesuffix(": ")
