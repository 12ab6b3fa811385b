"""Timers across a promotion: the slave copies its master's timer checkpoint every 3 s
(GET_TIMER_CHECK_POINT), so a slave promoted after its master's kill -9 neither delivers again
the timers the master delivered before that copy nor loses the ones still pending. Promotion
is the path ``mqcluster promote`` takes: the slave restarts on its store as master."""

from __future__ import annotations

import time

import pytest
import trio

from broker.timer import checkpoint
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import (
    call,
    pull_all,
    send_request,
    start_namesrv,
)
from tests.kits.hakit import (
    promote_slave,
    runtime_info,
    start_pair,
    wait_converged,
    wait_until,
)

EARLY, LATE = 10, 10
LATE_AFTER_MS = 12_000  # past the promotion below (about 5 s), so the late ones are pending


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def timer_check_point(client: RemotingClient, addr: str) -> checkpoint.TimerCheckpoint:
    request = RemotingCommand.request(RequestCode.GET_TIMER_CHECK_POINT, {})
    response = await call(client, addr, request)
    assert response.code == 0, response.remark
    return checkpoint.decode(response.body)


async def send_timer(client: RemotingClient, addr: str, body: bytes, at_ms: int) -> None:
    request = send_request("TimerFo", body, properties={"TIMER_DELIVER_MS": str(at_ms)})
    response = await call(client, addr, request)
    assert response.code == 0, response.remark


async def bodies(client: RemotingClient, addr: str) -> list[bytes]:
    async def dispatched() -> bool:
        return (await runtime_info(client, addr))["dispatchBehindBytes"] == "0"

    await wait_until(dispatched, 30, "the broker to dispatch what it stored")
    return sorted(m.body for m in await pull_all(client, addr, "TimerFo", 0, group="Reader"))


async def _promote_with_timers(processes, tmp_path, *, await_late: bool) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    pair = start_pair(processes, tmp_path, namesrv.addr, timerPrecisionMs=100)
    early = [b"early%d" % i for i in range(EARLY)]
    late = [b"late%d" % i for i in range(LATE)]
    async with RemotingClient.open() as client:
        for i, body in enumerate(early):  # timer queue offsets 0-9
            await send_timer(client, pair.master.addr, body, now_ms() + 300 + 50 * i)
        late_at = now_ms() + LATE_AFTER_MS
        for body in late:  # offsets 10-19
            await send_timer(client, pair.master.addr, body, late_at)

        async def early_delivered_and_copied() -> bool:
            copied = await timer_check_point(client, pair.slave.addr)
            return copied.last_timer_queue_offset == EARLY

        await wait_until(early_delivered_and_copied, 30, "the slave to copy the timer progress")
        assert (await timer_check_point(client, pair.master.addr)).last_timer_queue_offset == EARLY
        await wait_converged(client, pair.master.addr, pair.slave.addr)
        promoted = promote_slave(
            processes, pair, pair.slave, tmp_path, namesrv.addr, timerPrecisionMs=100
        )

        async def resumed() -> bool:
            cp = await timer_check_point(client, promoted.addr)
            return cp.master_timer_queue_offset == EARLY + LATE

        await wait_until(resumed, 30, "the promoted slave to read the timer queue")
        # the early ones once (the master's copies), none delivered again; the late ones held
        assert await bodies(client, promoted.addr) == sorted(early)
        assert (await timer_check_point(client, promoted.addr)).last_timer_queue_offset == EARLY
        if await_late:
            with trio.fail_after(60):
                while len(got := await bodies(client, promoted.addr)) < EARLY + LATE:
                    await trio.sleep(0.2)
            assert got == sorted(early + late)
            assert now_ms() >= late_at


async def test_a_promoted_slave_resumes_timers_where_its_master_was(processes, tmp_path) -> None:
    await _promote_with_timers(processes, tmp_path, await_late=False)


@pytest.mark.slow
async def test_a_promoted_slave_delivers_the_pending_timers_once(processes, tmp_path) -> None:
    await _promote_with_timers(processes, tmp_path, await_late=True)
