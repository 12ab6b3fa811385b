"""A slave's config sync survives its master vanishing mid-request (it used to take the whole
slave down with it), and runs its full rounds every slaveSynchronizeInterval."""

from __future__ import annotations

import trio

from broker.namesrv_registrar import HaState
from broker.slave import slave_synchronize
from broker.slave.slave_synchronize import SlaveSynchronize
from remoting.errors import RemotingConnectError


class VanishingMaster:
    def __init__(self, rounds_wanted: int = 2) -> None:
        self.calls: list[float] = []  # when each round asked (trio time)
        self.rounds_wanted = rounds_wanted
        self.twice = trio.Event()

    async def invoke(self, addr, request, timeout_s):
        self.calls.append(trio.current_time())
        if len(self.calls) == self.rounds_wanted:
            self.twice.set()
        raise RemotingConnectError(f"connection to {addr} closed: reset by peer")


def synchronize(client: VanishingMaster, **kwargs: float) -> SlaveSynchronize:
    return SlaveSynchronize(
        ha=HaState(master_addr="127.0.0.1:10911"),
        broker_addr="127.0.0.1:10921",
        topics=None,  # type: ignore[arg-type]  # the master vanishes before any is read
        offsets=None,  # type: ignore[arg-type]
        delay_offsets=None,  # type: ignore[arg-type]
        groups=None,  # type: ignore[arg-type]
        timer_progress=None,
        client=client,  # type: ignore[arg-type]
        **kwargs,
    )


async def test_sync_failures_are_logged_and_retried(monkeypatch) -> None:
    monkeypatch.setattr(slave_synchronize, "TIMER_INTERVAL_S", 0.01)
    client = VanishingMaster()
    sync = synchronize(client, interval_s=0.01)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sync.run)
        with trio.fail_after(5):
            await client.twice.wait()  # a second round came: the first failure did not escape
        nursery.cancel_scope.cancel()
    assert sync.last_sync_ok is False


async def test_full_rounds_come_every_slave_synchronize_interval(autojump_clock) -> None:
    client = VanishingMaster(rounds_wanted=3)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(synchronize(client, interval_s=0.5).run)
        await client.twice.wait()
        nursery.cancel_scope.cancel()
    first, second, third = client.calls
    assert (round(second - first, 6), round(third - second, 6)) == (0.5, 0.5)


async def test_by_default_a_full_round_waits_for_the_ten_second_period(autojump_clock) -> None:
    client = VanishingMaster()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(synchronize(client).run)
        await client.twice.wait()
        nursery.cancel_scope.cancel()
    # the 3 s timer-checkpoint tick finds the 10 s period passed at its fourth beat
    assert client.calls[1] - client.calls[0] == 12.0
