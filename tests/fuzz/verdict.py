"""After the hostile traffic: what the servers must show (each failure a Finding).

* alive, and answering within the hang limit;
* no traceback and no line at ERROR or CRITICAL in their logs (our own bugs are logged there;
  a bad frame is a WARNING); a traceback's peer port names the cases sent from it; no control
  character from the wire in a log line (it could forge lines);
* nothing created, removed or changed in the world outside the stores;
* sockets back to where they were, and the heap (anonymous RSS) back near its baseline; no
  pull left held for a client that is gone;
* after kill -9 and a restart, every acknowledged message served again: the good ones pulled
  from their queues, the hostile ones read back by their offset.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio

from remoting import message as codec
from remoting.body import KVTable
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body
from tests.fuzz.report import Report, Sample, Tally
from tests.fuzz.traffic import GOOD_TOPIC, HANG_S, ping_request
from tests.fuzz.world import World, sample
from tests.kits.brokerkit import pull_all

MIB = 1024 * 1024
# What the heap may keep after the abusers left: topics, groups and clients they registered
# (kept as in Java), allocator slack. A per-connection or per-frame leak is far larger.
HEAP_KEPT_BYTES = 64 * MIB
SOCKETS_KEPT = 4  # a broker's registration connection may be re-made meanwhile
SETTLE_S = 30.0
_PEER = re.compile(r"peer=127\.0\.0\.1:(\d+)")
# A line logged at ERROR or CRITICAL, or a traceback printed on lines of its own (a message
# may quote a client's text saying ERROR or Traceback: only the level field counts in it).
_LOGGED_BAD = re.compile(r"\d{4}-\d\d-\d\d \S+ (ERROR|CRITICAL) ")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_STAMP = re.compile(r"\d{4}-\d\d-\d\d ")
_RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")


def log_problems(path: Path) -> list[list[str]]:
    """Each traceback or ERROR/CRITICAL line, with the lines after it that belong to it (up
    to the next line that starts with a timestamp)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    blocks: list[list[str]] = []
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        stamped = _STAMP.match(line) is not None
        if not (_LOGGED_BAD.match(line) if stamped else _TRACEBACK.search(line)):
            continue
        block = [line]
        while number < len(lines) and not _STAMP.match(lines[number]):
            block.append(lines[number])
            number += 1
        blocks.append(block)
    return blocks


def check_logs(world: World, tally: Tally, report: Report) -> None:
    """Every process the campaign started, the killed broker included."""
    for server in world.pool.processes:
        name = server.name
        for block in log_problems(server.log_path):
            report.tracebacks += any("Traceback" in line for line in block)
            report.errors_logged += 1
            ports = [int(p) for p in _PEER.findall(block[0])]
            suspects = [c for port in ports for c in tally.recent(port)]
            text = "\n    ".join(block[:30])
            tally.find("logged", f"{name} logged:\n    {text}", suspects)


def check_log_bytes(world: World, tally: Tally) -> None:
    """No control character reached a log line (remoting/log_format.py escapes them): one
    that did could have ended the line and begun a forged one."""
    for server in world.pool.processes:
        try:
            data = server.log_path.read_bytes()
        except FileNotFoundError:
            continue
        match = _RAW_CONTROL.search(data)
        if match is not None:
            start = data.rfind(b"\n", 0, match.start()) + 1
            line = data[start : data.find(b"\n", match.end())][:300]
            tally.find("logged", f"{server.name} logged a control character: {line!r}")


def check_alive(world: World, tally: Tally) -> None:
    for name, server in world.servers().items():
        if not server.alive():
            tally.find("crash", f"{name} exited: {server.proc.poll() if server.proc else '?'}\n"
                       f"{server.log_tail(30)}")  # fmt: skip


async def check_answers(world: World, tally: Tally) -> None:
    async with RemotingClient.open() as client:
        for name, server in world.servers().items():
            if not server.alive():
                continue
            try:
                await client.invoke(server.addr, ping_request(name == "namesrv"), HANG_S)
            except Exception as exc:  # any failure to answer is the finding
                tally.find("hang", f"{name} did not answer after the campaign: {exc!r}")


async def settle(world: World, report: Report) -> None:
    """Wait (bounded) for sockets and heap to come back near the baseline, then record them."""
    for name, server in world.servers().items():
        if not server.alive():
            continue  # a crash: found already
        before = report.before[name]

        def near(now: Sample, before: Sample = before) -> bool:
            # sockets: back to the very number if they come (the figures say so), judged
            # with SOCKETS_KEPT of slack below
            return (
                now.socket_fds <= before.socket_fds
                and now.rss_anon <= before.rss_anon + HEAP_KEPT_BYTES
            )

        now = sample(server.pid)
        with trio.move_on_after(SETTLE_S):
            while not near(now):
                await trio.sleep(0.5)
                now = sample(server.pid)
        report.after[name] = now
        if now.socket_fds > before.socket_fds + SOCKETS_KEPT:
            report.tally.find(
                "descriptors",
                f"{name} holds {now.socket_fds} sockets (before: {before.socket_fds})",
            )
        if now.rss_anon > before.rss_anon + HEAP_KEPT_BYTES:
            report.tally.find(
                "memory",
                f"{name} heap {now.rss_anon // MIB} MiB, was {before.rss_anon // MIB} MiB "
                f"(allowed +{HEAP_KEPT_BYTES // MIB} MiB)",
            )


async def check_held_pulls(world: World, tally: Tally) -> None:
    """Pulls the hostile clients left suspended are given up with their connections."""
    if world.broker is None or not world.broker.alive():
        return  # a crash: found already
    request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
    held = "?"
    async with RemotingClient.open() as client:
        with trio.move_on_after(SETTLE_S):
            while True:
                response = await client.invoke(world.broker.addr, request, HANG_S)
                held = decode_body(KVTable, response.body).table.get("pullHeldCount", "?")
                if held == "0":
                    return
                await trio.sleep(0.5)
    tally.find("pulls", f"the broker still holds {held} pulls of clients that left")


async def check_recovered(addr: str, tally: Tally, report: Report) -> None:
    """Every acknowledged good message pulled back, every acknowledged hostile one viewed."""
    async with RemotingClient.open() as client:
        pulled = set()
        for queue_id in range(4):
            for message in await pull_all(client, addr, GOOD_TOPIC, queue_id, group="FuzzCheck"):
                pulled.add(bytes(message.body))
        missing = [body for body in tally.good_acked if body not in pulled]
        report.good_recovered = len(tally.good_acked) - len(missing)
        if missing:
            shown = b", ".join(sorted(missing)[:10]).decode()
            tally.find("lost", f"{len(missing)} acknowledged good messages not pulled: {shown}")
        lost = []
        for phys, body in sorted(tally.fuzz_acked.items()):
            if await _viewed(client, addr, phys) != body:
                lost.append(f"{phys}:{body[:40]!r}")
        report.fuzz_recovered = len(tally.fuzz_acked) - len(lost)
        if lost:
            tally.find("lost", f"{len(lost)} acknowledged hostile sends not found: {lost[:10]}")


async def _viewed(client: RemotingClient, addr: str, phys: int) -> bytes | None:
    view = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(phys)})
    response = await client.invoke(addr, view, HANG_S)
    if response.code != ResponseCode.SUCCESS:
        return None
    try:
        (message,) = codec.decode_messages(response.body, decompress=False)
    except ValueError:  # MessageDecodeError included
        return None
    return bytes(message.body)
