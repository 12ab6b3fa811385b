"""A run that ends abruptly leaves no server behind: ^C (SIGINT) in the middle of a test runs
the teardowns; a test process killed outright (SIGKILL, no teardown, no atexit) leaves servers
that notice their parent is gone and stop themselves."""

from __future__ import annotations

import time

import pytest

from tests.plugin.scratch import leftover_servers, run_project, tag_run

INTERRUPTED = """
import os
import signal


def test_interrupted_mid_test(rocketmq_cluster_factory):
    rocketmq_cluster_factory("pair")
    os.kill(os.getpid(), signal.SIGINT)
"""

KILLED = """
import os
import signal


def test_killed_mid_test(rocketmq_cluster):
    rocketmq_cluster.pause_broker("broker-a")
    rocketmq_cluster.resume_broker("broker-a")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_sigint_mid_test_stops_the_cluster(pytester: pytest.Pytester, monkeypatch) -> None:
    tag = tag_run(monkeypatch)
    result = run_project(pytester, INTERRUPTED)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    assert leftover_servers(tag) == []


def test_a_killed_test_process_leaves_servers_that_stop_themselves(
    pytester: pytest.Pytester, monkeypatch
) -> None:
    tag = tag_run(monkeypatch)
    result = run_project(pytester, KILLED)
    assert result.ret == -9
    deadline = time.monotonic() + 30  # parent checked every 0.5 s, then a clean stop
    while leftover_servers(tag) and time.monotonic() < deadline:
        time.sleep(0.2)  # other processes' state: polled, with a deadline
    assert leftover_servers(tag) == []
