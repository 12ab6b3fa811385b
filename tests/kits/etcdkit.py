"""A single-member etcd (Debian's ``etcd-server``) on free 127.0.0.1 ports in a tmp folder, for
the auto-failover tests (broker/election/). Tests that need it skip, saying why, when the
binary is missing (``make install`` installs it as root).

The member keeps its data folder and ports across ``kill()``/``start()``, so "etcd down" and
"etcd back" are the same member going away and returning, as in production.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.harness import free_port_block

ETCD = shutil.which("etcd")
START_ATTEMPTS = 5
READY_TIMEOUT_S = 30.0
POLL_S = 0.05

needs_etcd = pytest.mark.skipif(
    ETCD is None,
    reason="no etcd binary: the auto-failover tests need Debian's etcd-server "
    "(make install installs it as root)",
)


class EtcdMember:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.data_dir = base / "data"
        self.log_path = base / "etcd.log"
        self.client_port = 0
        self.peer_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def _argv(self) -> list[str]:
        assert ETCD is not None
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        return [
            ETCD,
            "--name=member0",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=member0={peer}",
            "--initial-cluster-state=new",
        ]

    def start(self) -> EtcdMember:
        """First start picks ports (retrying when another process took them in between);
        a restart keeps them, as a real member's address does not change."""
        self.base.mkdir(parents=True, exist_ok=True)
        fresh = self.client_port == 0
        for _ in range(START_ATTEMPTS if fresh else 1):
            if fresh:
                self.client_port = free_port_block(2)
                self.peer_port = self.client_port + 1
            if self._start_once():
                return self
        raise RuntimeError(f"etcd did not start; last log lines:\n{self.log_tail()}")

    def _start_once(self) -> bool:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self._argv(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # "address already in use", most likely: the caller retries
            if self.healthy():
                return True
            time.sleep(POLL_S)
        self.kill()
        return False

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/health", timeout=1) as response:
                return b'"true"' in response.read()
        except OSError:
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdMember]:
    if ETCD is None:
        pytest.skip(needs_etcd.kwargs["reason"])
    member = EtcdMember(tmp_path / "etcd").start()
    try:
        yield member
    finally:
        member.stop()


@pytest.fixture(scope="module")
def module_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdMember]:
    """One member for a module whose tests each use their own key prefix."""
    if ETCD is None:
        pytest.skip(needs_etcd.kwargs["reason"])
    member = EtcdMember(tmp_path_factory.mktemp("etcd")).start()
    try:
        yield member
    finally:
        member.stop()


class CutProxy:
    """A TCP relay in front of etcd for one broker, to cut that broker alone off from etcd
    (a partition without iptables). ``cut()`` stops relaying and holds every connection open
    without answering, old and new: the worst case, a peer that accepts and never replies."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.is_cut = False
        self._pumps: set[trio.CancelScope] = set()
        self._held: list[trio.SocketStream] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._relay, listeners)

    def cut(self) -> None:
        self.is_cut = True
        for scope in self._pumps:
            scope.cancel()

    def heal(self) -> None:
        self.is_cut = False
        self._held.clear()

    async def _relay(self, client: trio.SocketStream) -> None:
        if self.is_cut:
            self._held.append(client)  # accepted, never answered
            return
        scope = trio.CancelScope()
        self._pumps.add(scope)
        upstream = await trio.open_tcp_stream("127.0.0.1", self.target_port)
        with scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, client, upstream, nursery.cancel_scope)
                nursery.start_soon(_pump, upstream, client, nursery.cancel_scope)
        self._pumps.discard(scope)
        if scope.cancelled_caught:
            self._held.append(client)  # cut mid-connection: the broker waits on it
            await upstream.aclose()
            return
        await client.aclose()
        await upstream.aclose()


async def _pump(source: trio.SocketStream, sink: trio.SocketStream, both: trio.CancelScope) -> None:
    """One direction; when it ends (EOF or a reset) the other ends with it."""
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    both.cancel()
