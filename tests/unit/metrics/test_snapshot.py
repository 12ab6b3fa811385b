"""The metrics snapshot made off the scrape path (metrics/snapshot.py), the gzip body of two
members (metrics/http.py) and the walk in slices
(broker/metrics/queue_families.py); the series bounds are test_cardinality.py's."""

from __future__ import annotations

import gzip

import trio
import trio.testing

from broker.metrics.queue_families import _in_slices
from metrics.http import Body
from metrics.snapshot import Snapshotter


async def made(snapshots: Snapshotter, count: int) -> None:
    """Until ``count`` snapshots were made (each is gzipped in a worker thread, which
    wait_all_tasks_blocked does not wait for)."""
    with trio.fail_after(10):
        while snapshots.made + (snapshots.failed is not None) < count:
            await trio.sleep(0.001)


class Producer:
    """Snapshots numbered 1, 2, ...; each waits for ``release`` when ``gate`` is set."""

    def __init__(self) -> None:
        self.made = 0
        self.gate: trio.Event | None = None

    async def __call__(self) -> bytes:
        if self.gate is not None:
            await self.gate.wait()
        self.made += 1
        return b"snapshot %d\n" % self.made


async def test_the_first_scrape_waits_then_scrapes_serve_the_last_and_ask_for_the_next() -> None:
    produce = Producer()
    snapshots = Snapshotter(produce)
    async with trio.open_nursery() as nursery:
        await nursery.start(snapshots.run)
        first = await snapshots.current()
        assert first.text == b"snapshot 1\n" and gzip.decompress(first.gzipped) == first.text
        produce.gate = trio.Event()
        # a scrape while the next snapshot is being made is answered with the last one
        assert (await snapshots.current()).text == b"snapshot 1\n"
        await trio.testing.wait_all_tasks_blocked()
        assert (await snapshots.current()).text == b"snapshot 1\n"
        produce.gate.set()
        await made(snapshots, 3)
        await trio.testing.wait_all_tasks_blocked()
        # two scrapes during one snapshot ask for one more, not one each
        assert produce.made == 3 and snapshots.last.text == b"snapshot 3\n"
        nursery.cancel_scope.cancel()


async def test_nobody_scraping_means_no_work() -> None:
    produce = Producer()
    snapshots = Snapshotter(produce)
    async with trio.open_nursery() as nursery:
        await nursery.start(snapshots.run)
        await trio.testing.wait_all_tasks_blocked()
        assert produce.made == 0
        nursery.cancel_scope.cancel()


async def test_a_failed_snapshot_keeps_the_last_one_served() -> None:
    fail = False

    async def produce() -> bytes:
        if fail:
            raise OSError("boom")
        return b"good\n"

    snapshots = Snapshotter(produce)
    async with trio.open_nursery() as nursery:
        await nursery.start(snapshots.run)
        assert (await snapshots.current()).text == b"good\n"
        fail = True
        await snapshots.current()
        await made(snapshots, 2)
        assert isinstance(snapshots.failed, OSError)
        assert (await snapshots.current()).text == b"good\n"
        nursery.cancel_scope.cancel()


async def test_without_any_snapshot_a_scrape_fails_instead_of_waiting_forever() -> None:
    async def produce() -> bytes:
        raise OSError("boom")

    snapshots = Snapshotter(produce)
    async with trio.open_nursery() as nursery:
        await nursery.start(snapshots.run)
        try:
            await snapshots.current()
        except RuntimeError as exc:
            assert isinstance(exc.__cause__, OSError)
        else:
            raise AssertionError("a scrape without a snapshot must fail")
        nursery.cancel_scope.cancel()


async def test_the_two_gzip_members_read_as_the_plain_text() -> None:
    made_before = b"".join(b'big_series{n="%d"} %d\n' % (n, n) for n in range(5_000))
    body = Body(b"fresh 1\n" * 3_000, made_before, gzip.compress(made_before))
    assert gzip.decompress(await body.gzipped()) == body.plain()
    small = Body(b"small 1\n", made_before)  # the part made before was not gzipped yet
    assert gzip.decompress(await small.gzipped()) == b"small 1\n" + made_before


async def test_the_walk_gives_the_loop_back_between_slices() -> None:
    ran_between: list[int] = []
    steps = 0

    def work():  # type: ignore[no-untyped-def]
        nonlocal steps
        for _ in range(100):
            steps += 1
            yield

    async def other() -> None:
        while steps < 100:
            ran_between.append(steps)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        await _in_slices(work(), slice_s=0.0)
    # with no time allowed a slice is the shortest: the other task ran between slices of 16
    # steps (Trio decides which of the two runs first after each checkpoint)
    between = set(ran_between) - {100}
    assert len(between) >= 3 and all(step % 16 == 0 for step in between), between
