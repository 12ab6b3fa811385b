"""Memory against clients that send most of a big frame and leave, on a real ``mqnamesrv`` and
``mqbroker``: what the server holds for partial frames is bounded by
``serverPartialFramesMaxBytes`` while they stay, and given back once they go (its RSS returns
near where it started, round after round)."""

from __future__ import annotations

import struct

import psutil
import pytest
import trio

from remoting.client import RemotingClient
from tests.harness import ProcessPool, ServerProcess
from tests.kits.brokerkit import broker_conf, call, route_request, start_broker
from tests.kits.brokerkit import start_namesrv as start_namesrv_process
from tests.kits.hakit import wait_until

MIB = 1024 * 1024
FRAME = 16 * MIB  # the largest frame a server takes by default
SENT = FRAME * 95 // 100  # what each client sends of it before leaving
# What a server may keep after the abusers left: small objects, allocator slack. The leak this
# guards against kept everything (~15 MiB per client).
KEPT_AFTER_BYTES = 24 * MIB


def start_server(kind: str, processes: ProcessPool, tmp_path, **overrides: object) -> ServerProcess:
    if kind == "namesrv":
        return start_namesrv_process(processes, tmp_path, **overrides)
    return start_broker(processes, broker_conf(tmp_path, **overrides))


def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


async def send_partial_frame(addr: str, closed_by_server: list[int]) -> trio.SocketStream:
    """Open a connection and send the first SENT bytes of a FRAME-byte frame."""
    host, port = addr.split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    chunk = b"x" * MIB
    try:
        await stream.send_all(struct.pack(">iI", FRAME, 200))
        for at in range(0, SENT - 8, MIB):
            await stream.send_all(chunk[: min(MIB, SENT - 8 - at)])
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        closed_by_server.append(1)
    return stream


async def abuse(addrs: list[str], clients: int) -> tuple[list[trio.SocketStream], int]:
    """``clients`` connections, spread over ``addrs``, each sending a partial frame."""
    streams: list[trio.SocketStream] = []
    closed: list[int] = []

    async def one(addr: str) -> None:
        streams.append(await send_partial_frame(addr, closed))

    async with trio.open_nursery() as nursery:
        for n in range(clients):
            nursery.start_soon(one, addrs[n % len(addrs)])
    return streams, len(closed)


def addresses(kind: str, server: ServerProcess) -> list[str]:
    """The server's ports: the broker's VIP port (listenPort - 2) shares its limit."""
    if kind == "namesrv":
        return [server.addr]
    return [server.addr, f"127.0.0.1:{server.port - 2}"]


@pytest.mark.parametrize("kind", ["namesrv", "broker"])
async def test_partial_frames_are_given_back_when_their_clients_leave(
    processes, tmp_path, kind: str
) -> None:
    server = start_server(kind, processes, tmp_path)
    process = psutil.Process(server.pid)
    baseline_rss, baseline_fds = rss(server.pid), process.num_fds()
    clients = 12  # 12 x 15.2 MiB: under the default 256 MiB limit, nobody is refused
    for round_no in range(3):
        streams, closed = await abuse(addresses(kind, server), clients)
        assert closed == 0

        async def holding_them() -> bool:
            return rss(server.pid) > baseline_rss + clients * SENT * 8 // 10

        await wait_until(holding_them, 30, f"round {round_no}: the server to read the frames")
        for stream in streams:
            await stream.aclose()

        async def gave_back() -> bool:
            return (
                process.num_fds() <= baseline_fds
                and rss(server.pid) <= baseline_rss + KEPT_AFTER_BYTES
            )

        await wait_until(
            gave_back,
            30,
            f"round {round_no}: RSS back near {baseline_rss // MIB} MiB "
            f"(now {rss(server.pid) // MIB} MiB)",
        )


@pytest.mark.parametrize("kind", ["namesrv", "broker"])
async def test_partial_frames_of_all_clients_stay_under_the_servers_limit(
    processes, tmp_path, kind: str
) -> None:
    limit = 64 * MIB
    server = start_server(kind, processes, tmp_path, serverPartialFramesMaxBytes=limit)
    baseline_rss = rss(server.pid)
    peak = baseline_rss
    async with trio.open_nursery() as nursery:
        done = trio.Event()
        outcome: dict[str, object] = {}

        async def run_abusers() -> None:
            outcome["streams"], outcome["closed"] = await abuse(addresses(kind, server), 20)
            done.set()

        nursery.start_soon(run_abusers)
        while not done.is_set():
            peak = max(peak, rss(server.pid))
            with trio.move_on_after(0.01):
                await done.wait()
    # 20 x 15.2 MiB were sent; at most 64 MiB of it (plus one read per client) was held.
    assert peak - baseline_rss <= limit + 40 * MIB, f"peak RSS +{(peak - baseline_rss) // MIB} MiB"
    fit = limit // SENT

    async def closed_the_rest() -> bool:
        return len(client_connections(server)) <= fit

    await wait_until(closed_the_rest, 30, f"the server to keep at most {fit} of the 20 clients")
    async with RemotingClient.open() as client:  # and it still answers anyone
        response = await call(client, server.addr, route_request("T"))
    assert response.is_response
    for stream in outcome["streams"]:  # type: ignore[attr-defined]
        await stream.aclose()
    assert "closing the stalest" in server.log_tail(200)


def client_connections(server: ServerProcess) -> set[tuple[object, object]]:
    """The server's established client connections (one entry per socket, however many
    descriptors it has on it)."""
    return {
        (c.laddr, c.raddr)
        for c in psutil.Process(server.pid).net_connections(kind="tcp")
        if c.status == psutil.CONN_ESTABLISHED and c.laddr.port in (server.port, server.port - 2)
    }
