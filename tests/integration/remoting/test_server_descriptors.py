"""Descriptors on a real ``mqnamesrv`` and ``mqbroker``: one per client connection (a broker
under the default ``ulimit -n 1024`` serves ~1000 clients, not ~330), all given back when the
clients leave; and at the limit, accept() failing with EMFILE neither stops the server nor
floods its log, and clients waiting in the backlog are served once descriptors free up."""

from __future__ import annotations

import shlex
import sys

import psutil
import pytest
import trio

from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.frame import FrameDecoder
from tests.harness import ProcessPool, ServerProcess
from tests.kits.brokerkit import broker_conf, route_request, start_broker
from tests.kits.brokerkit import start_namesrv as start_namesrv_process
from tests.kits.hakit import wait_until

CLIENTS = 200
SPARE_FDS = 5  # descriptors a server may open besides its connections while the test runs


def start(kind: str, processes: ProcessPool, tmp_path) -> ServerProcess:
    if kind == "namesrv":
        return start_namesrv_process(processes, tmp_path)
    return start_broker(processes, broker_conf(tmp_path))


class Client:
    """A raw client connection: one request at a time, its reply read back."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.decoder = FrameDecoder()

    @classmethod
    async def open(cls, addr: str) -> Client:
        host, port = addr.split(":")
        return cls(await trio.open_tcp_stream(host, int(port)))

    async def call(self, request: RemotingCommand) -> RemotingCommand:
        await self.stream.send_all(encode_command_bytes(request))
        with trio.fail_after(10):
            while (frame := self.decoder.next_frame()) is None:
                data = await self.stream.receive_some(65536)
                assert data, "closed by the server"
                self.decoder.receive_data(data)
        return decode_command(frame)


@pytest.mark.parametrize("kind", ["namesrv", "broker"])
async def test_one_descriptor_per_client_connection(processes, tmp_path, kind: str) -> None:
    server = start(kind, processes, tmp_path)
    process = psutil.Process(server.pid)
    baseline = process.num_fds()
    clients = [await Client.open(server.addr) for _ in range(CLIENTS)]
    for client in clients:  # each one accepted, read and answered (the sender knows it too)
        assert (await client.call(route_request("T"))).is_response
    held = process.num_fds() - baseline
    assert CLIENTS <= held <= CLIENTS + SPARE_FDS, f"{held} descriptors for {CLIENTS} clients"
    for client in clients:
        await client.stream.aclose()

    async def given_back() -> bool:
        return process.num_fds() <= baseline

    await wait_until(given_back, 20, f"descriptors back to {baseline}")


async def test_at_the_descriptor_limit_accept_backs_off_and_resumes(processes, tmp_path) -> None:
    limit = 64
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={tmp_path}/kv.json\n")
    command = shlex.join([sys.executable, "-m", "namesrv", "-c", str(conf)])
    server = processes.start("namesrv", ["sh", "-c", f"ulimit -n {limit} && exec {command}"])
    process = psutil.Process(server.pid)
    served: list[Client] = []
    while process.num_fds() < limit:  # fill its table, each client served
        client = await Client.open(server.addr)
        assert (await client.call(route_request("T"))).is_response
        served.append(client)
    # These wait in the backlog: accept() fails with EMFILE meanwhile.
    waiting = [await Client.open(server.addr) for _ in range(5)]

    async def refused_once_logged() -> bool:
        return "cannot accept connections: EMFILE" in server.log_tail(200)

    await wait_until(refused_once_logged, 20, "the EMFILE warning")
    assert (await served[0].call(route_request("T"))).is_response  # open ones still served
    for client in served[-10:]:
        await client.stream.aclose()
    for client in waiting:  # accepted once descriptors came back, and served
        assert (await client.call(route_request("T"))).is_response
    log = server.log_path.read_text()
    assert log.count("cannot accept connections") == 1, log
    assert "accepts connections again" in log
    assert "Traceback" not in log
    assert server.alive()
