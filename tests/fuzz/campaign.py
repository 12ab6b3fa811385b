"""A fuzz campaign against a real ``mqnamesrv`` and ``mqbroker`` (issue 22, "Tests and
figures"): start them in a fresh world, learn what they serve, send hostile traffic for a while
with good sends mixed in, then judge (verdict.py) and report (report.py).

Bounded in CI (tests/fuzz/test_campaign.py); ``make fuzz`` runs it for as long as asked
(``python -m tests.fuzz --minutes 30``). Every case is rebuilt from the seed and its id:
``python -m tests.fuzz --replay w3/1234/b --seed 7`` prints its bytes.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import attrs
import trio

from broker.config import load_broker_config
from broker.controller import BrokerController
from namesrv.config import load_namesrv_config
from namesrv.controller import NamesrvController
from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import CURRENT_VERSION
from remoting.command import RemotingCommand
from remoting.errors import RemotingTimeoutError
from tests.fuzz import structural, traffic, verdict
from tests.fuzz.cases import Case, Plan
from tests.fuzz.report import Report, Tally
from tests.fuzz.seeds import bodies_by_code, corpus
from tests.fuzz.values import (
    class_from_refusal,
    field_table,
    hostile_values,
    request_header_classes,
)
from tests.fuzz.world import FUZZ_GROUP, FUZZ_TOPIC, World, changed, sample, snapshot
from tests.kits.brokerkit import send_request


@attrs.frozen
class Settings:
    seconds: float
    seed: int
    workers: int = 3  # random-case workers per server
    sweep: bool = True  # one worker per server walks every (code, field, value)
    structural: bool = True
    progress_every_s: float = 60.0


def served_codes() -> dict[str, list[int]]:
    """The request codes each server registers (controllers built, never started)."""
    with tempfile.TemporaryDirectory() as scratch:
        config, store = load_broker_config(
            {"storePathRootDir": f"{scratch}/store", "brokerIP1": "127.0.0.1"}
        )
        broker = sorted(BrokerController(config, store).server.processors)
        namesrv_config = load_namesrv_config({"kvConfigPath": f"{scratch}/kv.json"})
        namesrv = sorted(NamesrvController(namesrv_config).server.processors)
    return {"broker": broker, "namesrv": namesrv}


async def discover(client: RemotingClient, addr: str, codes: list[int]) -> dict[int, type | None]:
    """Code -> the header class the server names when refusing an empty header."""
    classes = request_header_classes()
    out: dict[int, type | None] = {}
    for code in codes:
        request = RemotingCommand.request(code, {})
        request.version = CURRENT_VERSION
        try:
            response = await client.invoke(addr, request, 5)
        except RemotingTimeoutError:
            out[code] = None
            continue
        out[code] = class_from_refusal(response.remark, classes)
    return out


async def discover_plan(world: World, seed: int) -> Plan:
    """Send a first message, learn each code's header class, and save what a replay needs
    (``plan.json`` in the world)."""
    assert world.broker is not None and world.namesrv is not None
    codes = served_codes()
    async with RemotingClient.open() as client:
        sent = await client.invoke(world.broker.addr, send_request(FUZZ_TOPIC, b"first"), 10)
        assert sent.code == 0, sent.remark
        msg_id = sent.ext("msgId") or ""
        phys = str(codec.decode_offset_msg_id(msg_id).phys_offset)
        found = {
            "broker": await discover(client, world.broker.addr, codes["broker"]),
            "namesrv": await discover(client, world.namesrv.addr, codes["namesrv"]),
        }
    saved = {
        "seed": seed,
        "world": str(world.root),
        "known": {"offset": phys, "commitLogOffset": phys, "msgId": msg_id},
        "classes": {
            side: {str(code): cls.__name__ if cls else None for code, cls in table.items()}
            for side, table in found.items()
        },
    }
    (world.root / "plan.json").write_text(json.dumps(saved, indent=1))
    return plan_from(saved)


def plan_from(saved: dict) -> Plan:
    """The Plan a campaign drew its cases from, rebuilt from its ``plan.json``."""
    classes = request_header_classes()
    tables = {}
    for side, table in saved["classes"].items():
        found = {int(code): classes[name] if name else None for code, name in table.items()}
        tables[side == "namesrv"] = field_table(found, FUZZ_TOPIC, FUZZ_GROUP, saved["known"])
    seeds = corpus(FUZZ_TOPIC, FUZZ_GROUP)
    world = Path(saved["world"])
    return Plan(
        seed=saved["seed"],
        world=world,
        seeds=seeds,
        tables=tables,
        values=hostile_values(world),
        bodies=bodies_by_code(seeds),
    )


def acked_recorder(tally: Tally) -> Callable[[Case, RemotingCommand], None]:
    def acked(case: Case, response: RemotingCommand) -> None:
        msg_id = response.ext("msgId") or ""
        try:
            phys = codec.decode_offset_msg_id(msg_id.split(",")[0]).phys_offset
        except ValueError:
            tally.find("answer", f"{case.kind}: acknowledged with msgId {msg_id!r}", [case.case_id])
            return
        assert case.stored_body is not None
        tally.fuzz_acked[phys] = case.stored_body

    return acked


async def hostile(world: World, plan: Plan, settings: Settings, tally: Tally, say) -> None:
    assert world.broker is not None and world.namesrv is not None
    addrs = {"broker": world.broker.addr, "namesrv": world.namesrv.addr}
    acked = acked_recorder(tally)
    async with trio.open_nursery() as nursery:
        for worker in range(settings.workers):
            for name, addr in addrs.items():
                namesrv = name == "namesrv"
                if namesrv and worker % 2:
                    continue  # the broker serves more codes: it gets more workers
                nursery.start_soon(
                    traffic.hostile_worker, plan, worker, addr, namesrv, tally, acked
                )
        if settings.sweep:
            for name, addr in addrs.items():
                worker = partial(traffic.hostile_worker, sweep=True)
                nursery.start_soon(worker, plan, -1, addr, name == "namesrv", tally, acked)
        if settings.structural:
            # the broker's VIP port (listenPort - 2) is served by the same code, on its own
            vip = f"127.0.0.1:{world.broker.port - 2}"  # type: ignore[operator]
            targets = {**addrs, "broker-vip": vip}
            nursery.start_soon(structural.structural_loop, targets, settings.seed, tally)
        nursery.start_soon(progress, world, tally, settings.progress_every_s, say)


async def progress(world: World, tally: Tally, every_s: float, say) -> None:
    told = 0  # findings already printed: a long campaign shows each when it happens
    while True:
        await trio.sleep(every_s)
        samples = "; ".join(
            f"{name} {sample(p.pid).line()}" for name, p in world.servers().items() if p.alive()
        )
        say(f"{tally.rate_line()}\n          {samples}")
        for finding in tally.findings[told:]:
            say(f"          finding: {str(finding)[:500]}")
        told = len(tally.findings)


async def run_campaign(world: World, settings: Settings, say=print) -> Report:
    world.prepare()
    world.start_namesrv()
    world.start_broker()
    plan = await discover_plan(world, settings.seed)
    tally = Tally()
    report = Report(seed=settings.seed, seconds=settings.seconds, tally=tally)
    files_before = snapshot(world.root, world.private)
    assert world.broker is not None
    async with trio.open_nursery() as background:
        background.start_soon(traffic.good_sender, world.broker.addr, tally)
        background.start_soon(
            traffic.prober, {n: p.addr for n, p in world.servers().items()}, tally
        )
        await _until(lambda: tally.pings >= 2 and len(tally.good_acked) > 0, "warm-up")
        report.before = {name: sample(p.pid) for name, p in world.servers().items()}
        started = trio.current_time()
        with trio.move_on_after(settings.seconds):
            await hostile(world, plan, settings, tally, say)
        report.seconds = trio.current_time() - started
        say(f"hostile traffic over: {tally.rate_line()}")
        verdict.check_alive(world, tally)
        await verdict.settle(world, report)
        await verdict.check_held_pulls(world, tally)
        await verdict.check_answers(world, tally)
        world.broker.kill()  # SIGKILL while the good sender is still sending
        background.cancel_scope.cancel()
    report.files_touched = changed(files_before, snapshot(world.root, world.private))
    if report.files_touched:
        tally.find("files", f"touched outside the stores: {report.files_touched[:20]}")
    again = world.start_broker("broker-again")
    await verdict.check_recovered(again.addr, tally, report)
    for name, server in world.servers().items():
        code = server.terminate()
        if code != 0:
            tally.find("exit", f"{name} exited with {code} on SIGTERM:\n{server.log_tail(20)}")
    verdict.check_logs(world, tally, report)
    verdict.check_log_bytes(world, tally)
    return report


async def _until(predicate: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    with trio.fail_after(timeout_s):
        while not predicate():
            await trio.sleep(0.05)


def describe(plan: Plan, case_id: str, limit: int = 2048) -> str:
    """A case as its id, kind and bytes in hex (cut at ``limit`` bytes)."""
    case = plan.case(case_id)
    shown = case.data[:limit].hex()
    more = f"... ({len(case.data)} bytes)" if len(case.data) > limit else ""
    server = "namesrv" if case.namesrv else "broker"
    return f"{case_id} {case.kind} ({case.shape.value}, to the {server})\n  {shown}{more}"


def suspects(plan: Plan, report: Report, per_finding: int = 4) -> list[str]:
    """Each finding's last few cases, as bytes: what to replay."""
    out = []
    for finding in report.findings:
        for case_id in finding.cases[-per_finding:]:
            out.append(describe(plan, case_id))
    return out
