"""Starts a set of server processes in order, each once the previous one printed its
``READY ... port=N`` line, and stops them in reverse on SIGINT/SIGTERM. Used by ``make run``
(a NameServer and one broker) and meant to grow into ``mqcluster``."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import attrs

READY = re.compile(r"READY\b.*\bport=(\d+)")


@attrs.define
class Member:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    port: int | None = None

    def start(self, timeout_s: float = 120) -> None:
        self.process = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            # Own session: a terminal Ctrl-C reaches only the launcher, which stops the
            # members in reverse order (brokers unregister before the NameServer goes).
            start_new_session=True,
        )
        ready = threading.Event()

        def pump() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                sys.stdout.write(f"[{self.name}] {line}")
                match = READY.search(line)
                if match and not ready.is_set():
                    self.port = int(match.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout_s) or self.port is None:
            raise RuntimeError(f"{self.name} did not start (exit code {self.process.poll()})")

    def stop(self, grace_s: float = 30) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run(members: Sequence[Member]) -> int:
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    started: list[Member] = []
    try:
        for member in members:
            print(f"starting {member.name}: {' '.join(member.argv)}", flush=True)
            member.start()
            started.append(member)
        print(
            "cluster up: "
            + ", ".join(f"{m.name}=127.0.0.1:{m.port}" for m in started)
            + " (Ctrl-C stops it)",
            flush=True,
        )
        while not stopping.is_set():
            dead = [m for m in started if m.process is not None and m.process.poll() is not None]
            if dead:
                print(f"{dead[0].name} exited with {dead[0].process.returncode}", flush=True)
                return 1
            time.sleep(0.5)
        return 0
    finally:
        for member in reversed(started):
            member.stop()
