"""TrioBridge: asyncio awaiting Trio work in another thread, results and errors carried back;
and the Telemetry outboxes check-backs are put to."""

from __future__ import annotations

import asyncio
import threading

import pytest
import trio

from proxy.apis import service_pb2 as rpc
from proxy.bridge import TrioBridge
from proxy.telemetry import OUTBOX, TelemetryStreams


def run_bridge(scenario) -> object:
    async def main(nursery: trio.Nursery, ready) -> None:
        ready()
        await trio.sleep_forever()

    bridge = TrioBridge(main)
    bridge.start(10)
    try:
        return asyncio.run(scenario(bridge))
    finally:
        bridge.close()


def test_calls_run_in_the_trio_thread_and_come_back() -> None:
    async def where(x: int) -> tuple[str, int]:
        await trio.sleep(0)
        return threading.current_thread().name, x * 2

    async def fails() -> None:
        raise ValueError("from trio")

    async def scenario(bridge: TrioBridge):
        results = await asyncio.gather(*(bridge.call(where, i) for i in range(50)))
        with pytest.raises(ValueError, match="from trio"):
            await bridge.call(fails)
        return results

    results = run_bridge(scenario)
    assert results == [("trio-remoting", i * 2) for i in range(50)]


def test_a_cancelled_caller_does_not_break_the_bridge() -> None:
    async def slow() -> str:
        await trio.sleep(0.2)
        return "late"

    async def quick() -> str:
        return "quick"

    async def scenario(bridge: TrioBridge):
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(bridge.call(slow), 0.01)
        await asyncio.sleep(0.3)  # the slow call finishes into a cancelled future
        return await bridge.call(quick)

    assert run_bridge(scenario) == "quick"


def test_a_main_that_fails_fails_start() -> None:
    async def main(nursery: trio.Nursery, ready) -> None:
        raise OSError("no NameServer")

    with pytest.raises(OSError, match="no NameServer"):
        TrioBridge(main).start(10)


def test_check_backs_go_to_a_producer_of_the_topic_in_turn() -> None:
    async def scenario() -> None:
        streams = TelemetryStreams()
        a, b, other = streams.open(), streams.open(), streams.open()
        streams.publishes(a, ["T"])
        streams.publishes(b, ["T", "U"])
        streams.publishes(other, ["V"])
        command = rpc.TelemetryCommand()
        assert all(streams.ask("T", command) for _ in range(4))
        assert (a.qsize(), b.qsize(), other.qsize()) == (2, 2, 0)
        assert not streams.ask("Nobody", command)
        streams.close(a)
        streams.close(b)
        assert not streams.ask("T", command)
        for _ in range(OUTBOX):
            assert streams.ask("V", command)
        assert not streams.ask("V", command)  # its outbox is full: the broker asks again later

    asyncio.run(scenario())
