"""Connection-level abuse: what a client can do to a server without a single well-formed
request. Each action takes a server address, a ``random.Random`` and the tally, and leaves no
connection open behind it.

* bad prefixes: lengths of 0, 3, -1, 2^31 - 1, past the frame limit; headers past the frame;
* a huge frame sent most of the way, then dropped;
* slow loris: frames a byte at a time, some finished (they must be answered), some dropped;
* many connections at once, closed with FIN or RST;
* a close in the middle of a request: a long-polling pull, a big batch, a pipelined flood not
  read;
* half-close: a request, then our side shut for writing: the answer must still come;
* the broker's HA port, as a slave reporting offsets it cannot have, or noise.
"""

from __future__ import annotations

import itertools
import random
import struct

import trio

from remoting import message as codec
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, encode_command_bytes
from remoting.frame import MAX_FRAME_BYTES
from tests.fuzz.report import Tally
from tests.fuzz.traffic import GOOD_TOPIC, HANG_S, connect, ping_request, rst_close
from tests.kits.brokerkit import pull_request, send_request

MIB = 1024 * 1024


def bad_prefixes() -> list[bytes]:
    header = b'{"code":105,"opaque":1}'
    return [
        b"\x00", b"\x00\x00\x00", struct.pack(">i", 0), struct.pack(">i", 3),
        struct.pack(">i", -1), struct.pack(">i", -(2**31)), struct.pack(">i", 2**31 - 1),
        struct.pack(">i", MAX_FRAME_BYTES + 1), struct.pack(">iI", 4, 0),
        struct.pack(">iI", 8, 100) + b"\x00" * 4, struct.pack(">iI", 12, 0xFFFFFF) + header[:8],
        struct.pack(">iI", 4 + len(header), len(header) + 1) + header,
        struct.pack(">iI", 4 + len(header), (5 << 24) | len(header)) + header,
    ]  # fmt: skip


async def _close_soon(stream: trio.SocketStream, rng: random.Random) -> None:
    if rng.random() < 0.5:
        rst_close(stream)
    await stream.aclose()


async def prefixes(addr: str, rng: random.Random, tally: Tally) -> None:
    for data in bad_prefixes():
        stream = await connect(addr, tally)
        try:
            await stream.send_all(data)
            with trio.move_on_after(0.5):  # refused at once, or waiting for more bytes
                await stream.receive_some(1024)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        await _close_soon(stream, rng)


async def huge_partial(addr: str, rng: random.Random, tally: Tally) -> None:
    stream = await connect(addr, tally)
    chunk = b"x" * MIB
    try:
        await stream.send_all(struct.pack(">iI", MAX_FRAME_BYTES, 200))
        for _ in range(rng.randint(1, 15)):
            await stream.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    await _close_soon(stream, rng)


async def slow_loris(addr: str, rng: random.Random, tally: Tally, namesrv: bool) -> None:
    data = encode_command_bytes(ping_request(namesrv))

    async def one() -> None:
        stream = await connect(addr, tally)
        finish = rng.random() < 0.5
        stop = len(data) if finish else rng.randrange(1, len(data))
        try:
            for at in range(stop):
                await stream.send_all(data[at : at + 1])
                await trio.sleep(rng.uniform(0.005, 0.05))
            if finish:
                with trio.move_on_after(HANG_S) as waited:
                    await stream.receive_some(65536)
                if waited.cancelled_caught:
                    tally.find("hang", f"a frame sent a byte at a time was not answered ({addr})")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        await _close_soon(stream, rng)

    async with trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(one)


async def many_connections(addr: str, rng: random.Random, tally: Tally, count: int = 200) -> None:
    streams = []
    try:
        for _ in range(count):
            stream = await connect(addr, tally)
            streams.append(stream)
            if rng.random() < 0.3:
                await stream.send_all(rng.randbytes(rng.randint(1, 7)))
    except (OSError, trio.BrokenResourceError, trio.TooSlowError):
        pass  # the server may close some (the partial-frames limit): fine
    finally:
        for stream in streams:
            with trio.CancelScope(shield=True):
                await _close_soon(stream, rng)


async def close_mid_request(addr: str, rng: random.Random, tally: Tally, namesrv: bool) -> None:
    if namesrv:
        requests = [ping_request(True) for _ in range(2000)]
    else:
        held = pull_request(GOOD_TOPIC, 0, 2**40, suspend_ms=20_000, group="FuzzHeld")
        entries = [(0, b"y" * 100, f"KEYS\x01k{i}") for i in range(1000)]
        batch = send_request(
            "FuzzT", codec.encode_batch_body(entries), code=RequestCode.SEND_BATCH_MESSAGE,
            batch=True,
        )  # fmt: skip
        table = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})
        requests = rng.choice([[held] * 50, [batch], [table] * 2000])
    stream = await connect(addr, tally)
    try:
        await stream.send_all(b"".join(encode_command_bytes(r) for r in requests))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    rst_close(stream)
    await stream.aclose()


async def half_close(addr: str, rng: random.Random, tally: Tally, namesrv: bool) -> None:
    stream = await connect(addr, tally)
    async with stream:
        try:
            await stream.send_all(encode_command_bytes(ping_request(namesrv)))
            await stream.send_eof()
            with trio.move_on_after(HANG_S):
                if await stream.receive_some(65536):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        # Java's Netty closes a channel on EOF (no half-close support) and may drop the answer:
        # not a finding either way, but counted.
        tally.structural["half-close-unanswered"] += 1


async def ha_port(addr: str, rng: random.Random, tally: Tally) -> None:
    """The broker's HA port as a hostile slave: offsets past the master's end, negative,
    torn, or noise; then gone. (``addr`` is the client port: HA listens one above it.)"""
    host, port = addr.rsplit(":", 1)
    ha = f"{host}:{int(port) + 1}"
    for data in (
        struct.pack(">q", rng.choice([2**63 - 1, 2**40, -1, -(2**63), 1])),
        struct.pack(">q", 0) + struct.pack(">q", 2**62),  # then acks what it was never sent
        b"\x00" * rng.randint(1, 7),
        rng.randbytes(rng.randint(8, 64)),
    ):
        stream = await connect(ha, tally)
        try:
            await stream.send_all(data)
            with trio.move_on_after(0.2):  # the master may start streaming: read a little
                await stream.receive_some(65536)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        await _close_soon(stream, rng)


ACTIONS = {
    "prefixes": prefixes,
    "huge-partial": huge_partial,
    "slow-loris": slow_loris,
    "many-connections": many_connections,
    "close-mid-request": close_mid_request,
    "half-close": half_close,
    "ha-port": ha_port,
}
BROKER_ONLY = {"ha-port"}
NEEDS_SIDE = {"slow-loris", "close-mid-request", "half-close"}


async def structural_loop(
    addrs: dict[str, str], seed: int, tally: Tally, pause_s: float = 0.2
) -> None:
    """Every action in turn against each server (one task per server), until cancelled."""
    async with trio.open_nursery() as nursery:
        for server, addr in addrs.items():
            nursery.start_soon(_actions_against, server, addr, seed, tally, pause_s)


async def _actions_against(server: str, addr: str, seed: int, tally: Tally, pause_s: float) -> None:
    for n in itertools.count():
        for name, action in ACTIONS.items():
            if name in BROKER_ONLY and server != "broker":
                continue
            rng = random.Random(f"{seed}/structural/{n}/{name}/{server}")
            args = (addr, rng, tally) + ((server == "namesrv",) if name in NEEDS_SIDE else ())
            await action(*args)
            tally.structural[name] += 1
            await trio.sleep(pause_s)
