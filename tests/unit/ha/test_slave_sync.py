"""A slave's config sync survives its master vanishing mid-request (it used to take the whole
slave down with it)."""

from __future__ import annotations

import trio

from broker.namesrv_registrar import HaState
from broker.slave import slave_synchronize
from broker.slave.slave_synchronize import SlaveSynchronize
from remoting.errors import RemotingConnectError


class VanishingMaster:
    def __init__(self) -> None:
        self.calls = 0
        self.twice = trio.Event()

    async def invoke(self, addr, request, timeout_s):
        self.calls += 1
        if self.calls == 2:
            self.twice.set()
        raise RemotingConnectError(f"connection to {addr} closed: reset by peer")


async def test_sync_failures_are_logged_and_retried(monkeypatch) -> None:
    monkeypatch.setattr(slave_synchronize, "INTERVAL_S", 0.01)
    monkeypatch.setattr(slave_synchronize, "TIMER_INTERVAL_S", 0.01)
    client = VanishingMaster()
    sync = SlaveSynchronize(
        ha=HaState(master_addr="127.0.0.1:10911"),
        broker_addr="127.0.0.1:10921",
        topics=None,  # type: ignore[arg-type]  # the master vanishes before any is read
        offsets=None,  # type: ignore[arg-type]
        delay_offsets=None,  # type: ignore[arg-type]
        groups=None,  # type: ignore[arg-type]
        timer_progress=None,
        client=client,  # type: ignore[arg-type]
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sync.run)
        with trio.fail_after(5):
            await client.twice.wait()  # a second round came: the first failure did not escape
        nursery.cancel_scope.cancel()
    assert sync.last_sync_ok is False
