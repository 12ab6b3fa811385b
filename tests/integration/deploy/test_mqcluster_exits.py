"""mqcluster's ways out: bad input is one line and exit 1; SIGTERM, Ctrl-C or a process that
fails to start while ``up`` is still starting stops everything it started and frees the ports."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from deploy.manifest import load_manifest
from tests.integration.deploy.clusterkit import free_offset
from tests.kits.clikit import REPO, assert_refused, run_cli


def bad_layout(tmp_path: Path) -> str:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "cluster.toml").write_text('name = "broken"\n[[process]]\nname = 3\n')
    return str(folder)


BAD = [
    (["up", "no/such/layout"], "no cluster.toml"),
    (["up", "deploy/single", "--port-offset", "x"], "--port-offset: invalid int value: 'x'"),
    (["up", "deploy/single", "--port-offset", "99999"], "outside 3..65534"),
    (["bogus", "deploy/single"], "invalid choice: 'bogus'"),
    (["stop", "deploy/single"], "name a process"),
    (["stop", "deploy/single", "nosuch"], "no process 'nosuch' in single"),
    (["logs", "deploy/single", "-n", "0"], "give at least 1 line"),
    (["promote", "deploy/single", "broker-a"], "broker-a has no master/slave pair"),
    (["up", "deploy/single", "--base-dir", "/proc/no/such"], "No such file or directory"),
    (["up"], "the following arguments are required: layout"),
]


@pytest.mark.parametrize(("argv", "expected"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_1(argv: list[str], expected: str) -> None:
    assert_refused(run_cli("deploy.mqcluster", *argv), expected)


def test_a_broken_layout_is_one_line(tmp_path) -> None:
    assert_refused(run_cli("deploy.mqcluster", "up", bad_layout(tmp_path)), "broken")


def layout_processes(base: Path) -> list[psutil.Process]:
    """Live processes started for the layout in ``base`` (their config lies under it)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if str(base) in cmdline and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def ports_free(ports: list[int]) -> bool:
    for port in ports:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_up_is_starting_stops_what_it_started(tmp_path, sig) -> None:
    offset = free_offset("2m-2s-async")
    base = tmp_path / "run"
    manifest = load_manifest(REPO / "deploy" / "2m-2s-async").shifted(offset)
    up = subprocess.Popen(
        [sys.executable, "-m", "deploy.mqcluster", "up", "deploy/2m-2s-async",
         "--base-dir", str(base), "--port-offset", str(offset)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # as from a shell script: our test's signals stay ours
    )  # fmt: skip
    try:
        seen = []
        for line in up.stdout:  # until the first NameServer serves and the next one starts
            seen.append(line)
            if line.startswith("[2/"):
                break
        assert any(" namesrv-1 up, pid " in line for line in seen), seen
        assert layout_processes(base)
        up.send_signal(sig)
        assert up.wait(120) == 1
        rest = up.stdout.read()
        assert "stopped namesrv-1" in rest
        assert up.stderr.read().strip().startswith("mqcluster up: interrupted while starting")
    finally:
        if up.poll() is None:
            up.kill()
    assert layout_processes(base) == []
    assert ports_free([port for spec in manifest.processes for port in spec.ports])
    assert not list((base / "run").glob("*.pid"))


def test_a_process_that_fails_to_start_takes_the_others_down(tmp_path) -> None:
    offset = free_offset("single")
    base = tmp_path / "run"
    # A broker.conf the broker refuses: the NameServer starts, the broker exits at once.
    layout = tmp_path / "single"
    layout.mkdir()
    for name in ("cluster.toml", "namesrv.conf"):
        (layout / name).write_text((REPO / "deploy" / "single" / name).read_text())
    conf = (REPO / "deploy" / "single" / "broker-a-m.conf").read_text()
    (layout / "broker-a-m.conf").write_text(conf + "flushDiskType=SOMETIMES\n")
    done = run_cli("deploy.mqcluster", "up", str(layout), "--base-dir", str(base),
                   "--port-offset", str(offset))  # fmt: skip
    line = assert_refused(done, "broker-a-m exited with code", "while starting")
    assert "see the last lines of" in line
    assert "SOMETIMES" in done.stdout  # the log tail goes to stdout, above the error line
    assert "stopped namesrv-1" in done.stdout
    assert layout_processes(base) == []
