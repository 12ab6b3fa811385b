"""Running a scratch project's tests in a subprocess (pytester) and what is left afterwards."""

from __future__ import annotations

import textwrap
import uuid

import psutil
import pytest

# Scratch projects get the settings a user's project would have: pytest-trio's trio mode for
# the Trio fixture, and the test cluster's spare processes off where a test counts processes.
TAG = "ROCKETMQ_TESTING_SCRATCH_RUN"
INI = """
[pytest]
trio_mode = true
addopts = -p no:cacheprovider
"""


def run_project(
    pytester: pytest.Pytester, source: str, *args: str, ini: str = ""
) -> pytest.RunResult:
    pytester.makeini(INI + ini)
    pytester.makepyfile(test_scratch=textwrap.dedent(source))
    return pytester.runpytest_subprocess("-v", *args, timeout=240)


def tag_run(monkeypatch: pytest.MonkeyPatch) -> str:
    """An environment variable every process of the scratch run inherits, servers included."""
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG, tag)
    return tag


def leftover_servers(tag: str) -> list[str]:
    """Server processes of the run tagged ``tag`` that still run."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if "rocketmq_testing.spawn" in " ".join(process.info["cmdline"] or []) and (
                process.environ().get(TAG) == tag
            ):
                found.append(f"{process.pid}: {' '.join(process.info['cmdline'])}")
        except psutil.Error:
            continue  # gone meanwhile, or not ours to look at
    return found
