"""kill -9 of a real ``mqbroker`` while good sends and malformed ones are in flight: every
acknowledged good message comes back exactly once, from its queue, and every acknowledged
hostile send is read back by its offset.

Each round starts the broker on the same store, runs a good sender (sends and batches over four
queues) beside hostile senders (tests/fuzz: send, batch and reply headers with values out of
every range, send and batch frames with flipped bits, lying lengths, damaged bodies and
properties, alone or pipelined), kills it with SIGKILL at a random moment, restarts it and
checks. ASYNC_FLUSH and SYNC_FLUSH; the long version is marked slow (``make test-all``)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
import trio

from remoting import headers as H
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from tests.fuzz import traffic, verdict
from tests.fuzz.campaign import acked_recorder
from tests.fuzz.cases import Plan
from tests.fuzz.report import Report, Tally
from tests.fuzz.seeds import bodies_by_code, corpus
from tests.fuzz.values import field_table, hostile_values
from tests.fuzz.world import FUZZ_GROUP, FUZZ_TOPIC
from tests.harness import ProcessPool
from tests.kits.brokerkit import broker_conf, pull_all, start_broker

C = RequestCode
SEND_HEADERS = {
    C.SEND_MESSAGE: H.SendMessageRequestHeader,
    C.SEND_MESSAGE_V2: H.SendMessageRequestHeaderV2,
    C.SEND_BATCH_MESSAGE: H.SendMessageRequestHeaderV2,
    C.SEND_REPLY_MESSAGE_V2: H.SendMessageRequestHeaderV2,
}
HOSTILE_WORKERS = 2


def send_plan(seed: int, world: Path) -> Plan:
    """Cases that only ever send: send headers' fields, and send frames mutated."""
    seeds = [s for s in corpus(FUZZ_TOPIC, FUZZ_GROUP) if s.command().code in SEND_HEADERS]
    table = field_table(dict(SEND_HEADERS), FUZZ_TOPIC, FUZZ_GROUP, {})
    return Plan(
        seed=seed,
        world=world,
        seeds=seeds,
        tables={False: table, True: table},
        values=hostile_values(world),
        bodies=bodies_by_code(seeds),
    )


async def crash_round(
    pool: ProcessPool, conf: Path, plan: Plan, round_no: int, rng: random.Random, tally: Tally
) -> None:
    broker = start_broker(pool, conf, f"broker-{round_no}")
    acked = acked_recorder(tally)
    wanted = len(tally.good_acked) + rng.randrange(20, 400)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(traffic.good_sender, broker.addr, tally, 0.0, f"r{round_no}")
        for worker in range(HOSTILE_WORKERS):
            number = round_no * HOSTILE_WORKERS + worker
            nursery.start_soon(
                traffic.hostile_worker, plan, number, broker.addr, False, tally, acked
            )
        with trio.fail_after(120):
            while len(tally.good_acked) < wanted:
                await trio.sleep(0.01)
        broker.kill()  # mid-flight: both senders have requests out
        nursery.cancel_scope.cancel()


async def check_exactly_once(addr: str, tally: Tally) -> None:
    report = Report(seed=0, seconds=0, tally=tally)
    await verdict.check_recovered(addr, tally, report)
    async with RemotingClient.open() as client:
        bodies = Counter()
        for queue_id in range(4):
            messages = await pull_all(client, addr, traffic.GOOD_TOPIC, queue_id, group="Check")
            bodies.update(bytes(m.body) for m in messages)
    twice = [body for body in tally.good_acked if bodies[body] > 1]
    assert not twice, f"acknowledged messages stored twice: {twice[:10]}"


async def crash_loop(tmp_path: Path, flush: str, rounds: int, seed: int) -> Tally:
    rng = random.Random(seed)
    pool = ProcessPool(tmp_path / "logs")
    conf = broker_conf(
        tmp_path, flushDiskType=flush, mappedFileSizeCommitLog=1 << 20, maxMessageSize=1 << 19
    )
    plan = send_plan(seed, tmp_path)
    tally = Tally()
    try:
        for round_no in range(rounds):
            await crash_round(pool, conf, plan, round_no, rng, tally)
            checker = start_broker(pool, conf, f"checker-{round_no}")
            await check_exactly_once(checker.addr, tally)
            checker.kill()  # the next round starts from an abnormal shutdown again
            assert not tally.findings, "\n".join(map(str, tally.findings))
        for process in pool.processes:  # nothing logged as our own bug, in any round
            assert verdict.log_problems(process.log_path) == [], process.name
    finally:
        pool.stop_all()
    assert len(tally.good_acked) > 20 * rounds and tally.frames_total > 0
    return tally


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
async def test_kill_9_amid_malformed_sends_loses_no_acknowledged_message(
    tmp_path: Path, flush: str
) -> None:
    await crash_loop(tmp_path, flush, rounds=2, seed=hash(flush) & 0xFFFF)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
async def test_kill_9_amid_malformed_sends_many_times(tmp_path: Path, flush: str) -> None:
    tally = await crash_loop(tmp_path, flush, rounds=25, seed=2222)
    print(f"{flush}: {len(tally.good_acked)} good and {len(tally.fuzz_acked)} hostile sends "
          f"acknowledged, {tally.frames_total} hostile frames")  # fmt: skip
