"""The hostile traffic and the good traffic mixed into it, over real TCP.

* ``hostile_worker``: draws cases (cases.py) and sends them: those the server decodes down a
  shared connection, answers read and checked as they come (every answer must decode; a value
  out of range must be refused; an acknowledged send is remembered), with a ping after every
  few and before the connection is dropped: unanswered within ``HANG_S``, the server hangs;
  the others alone on a connection of their own;
* ``good_sender``: sends and batch-sends to the good topic, remembering what was acknowledged;
* ``prober``: asks each server something simple every second and times the answer.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Callable

import attrs
import trio

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.errors import RemoteProtocolError, RemotingConnectError, RemotingTimeoutError
from remoting.frame import FrameDecoder
from tests.fuzz.cases import Case, Plan, Shape
from tests.fuzz.report import Tally
from tests.kits.brokerkit import send_request

HANG_S = 30.0  # an answer later than this is a hang (the machine is shared and slow)
PING_EVERY = 16  # pipelined cases between pings
ROTATE_AFTER = 64  # pipelined cases per connection
CONNECT_S = 10.0
STORED = {ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE}
GOOD_TOPIC = "FuzzGood"
PING_OPAQUE_BASE = 0x3F000000  # below the cases' opaques (cases.py: 2^30 and up)
_ping_numbers = itertools.count()


def ping_request(namesrv: bool) -> RemotingCommand:
    if namesrv:
        return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": GOOD_TOPIC})
    fields = {"topic": GOOD_TOPIC, "queueId": "0"}
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, fields)


def rst_close(stream: trio.SocketStream) -> None:
    """Make the coming close an RST (no FIN, no TIME_WAIT)."""
    try:
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass


async def connect(addr: str, tally: Tally) -> trio.SocketStream:
    host, port = addr.rsplit(":", 1)
    with trio.fail_after(CONNECT_S):
        stream = await trio.open_tcp_stream(host, int(port))
    tally.connections += 1
    return stream


@attrs.define
class Pipe:
    """One shared connection: cases out, answers in (read by ``read_answers``)."""

    stream: trio.SocketStream
    namesrv: bool
    tally: Tally
    port: int
    pending: dict[int, Case] = attrs.Factory(dict)
    sent: list[str] = attrs.Factory(list)
    pings: dict[int, trio.Event] = attrs.Factory(dict)
    closed: trio.Event = attrs.Factory(trio.Event)
    acked: Callable[[Case, RemotingCommand], None] | None = None

    async def read_answers(self) -> None:
        decoder = FrameDecoder()
        try:
            while data := await self.stream.receive_some(65536):
                decoder.receive_data(data)
                while (frame := decoder.next_frame()) is not None:
                    self._answer(decode_command(frame))
        except RemoteProtocolError as exc:
            self.tally.find("answer", f"an answer does not decode: {exc}", self.sent[-8:])
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.closed.set()
            for event in self.pings.values():
                event.set()

    def _answer(self, command: RemotingCommand) -> None:
        if not command.is_response:
            return  # the broker asking us something (a consumer-ids change): ignored
        self.tally.answers += 1
        if command.code != ResponseCode.SUCCESS:
            self.tally.refusals += 1
        ping = self.pings.pop(command.opaque, None)
        if ping is not None:
            ping.set()
            return
        case = self.pending.pop(command.opaque, None)
        if case is None:
            return
        if case.must_refuse is not None and command.code == ResponseCode.SUCCESS:
            self.tally.find(
                "accepted", f"{case.kind}: {case.must_refuse} out of range was accepted",
                [case.case_id],
            )  # fmt: skip
        elif case.stored_body is not None and command.code in STORED and self.acked is not None:
            self.acked(case, command)

    async def send(self, case: Case) -> None:
        if case.opaque is not None:
            self.pending[case.opaque] = case
        self.sent.append(case.case_id)
        self.tally.remember(self.port, case.case_id)
        self.tally.sent(case.kind, len(case.data))
        await self.stream.send_all(case.data)

    async def ping(self) -> bool:
        """False if the server closed the connection; a hang is a finding."""
        request = ping_request(self.namesrv)
        request.opaque = PING_OPAQUE_BASE + (next(_ping_numbers) & 0xFFFFF)
        event = self.pings[request.opaque] = trio.Event()
        started = time.monotonic()
        try:
            await self.stream.send_all(encode_command_bytes(request))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        with trio.move_on_after(HANG_S):
            await event.wait()
        if self.closed.is_set():
            return False
        if not event.is_set():
            server = "namesrv" if self.namesrv else "broker"
            self.tally.find("hang", f"{server} did not answer a ping in {HANG_S:g} s", self.sent)
            return False
        self.tally.ping(time.monotonic() - started)
        return True


async def one_shot(addr: str, case: Case, tally: Tally) -> None:
    """A case on a connection of its own: the server must close it (CLOSING), or we do."""
    stream = await connect(addr, tally)
    tally.remember(stream.socket.getsockname()[1], case.case_id)
    tally.sent(case.kind, len(case.data))
    async with stream:
        try:
            await stream.send_all(case.data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            tally.closed_by_server += 1
            return
        if case.shape is Shape.PARTIAL:
            rst_close(stream)
            return
        with trio.move_on_after(HANG_S) as waited:
            try:
                while await stream.receive_some(65536):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        if waited.cancelled_caught:
            tally.find("hang", f"{case.kind}: the connection was not closed", [case.case_id])
        else:
            tally.closed_by_server += 1
        rst_close(stream)


async def hostile_worker(
    plan: Plan,
    worker: int,
    addr: str,
    namesrv: bool,
    tally: Tally,
    acked: Callable[[Case, RemotingCommand], None],
    sweep: bool = False,
) -> None:
    """Cases until cancelled; ``sweep``: the systematic (code, field, value) list instead."""
    side = "n" if namesrv else "b"
    n = 0
    async with trio.open_nursery() as nursery:
        pipe: Pipe | None = None
        try:
            while True:
                case_id = f"sweep/{side}/{n}" if sweep else f"w{worker}/{n}/{side}"
                case = plan.case(case_id)
                n += 1
                if case.shape is not Shape.PIPELINED:
                    await one_shot(addr, case, tally)
                    continue
                if pipe is None or pipe.closed.is_set() or len(pipe.sent) >= ROTATE_AFTER:
                    if pipe is not None:
                        await _retire(pipe, tally)
                    pipe = await _open_pipe(nursery, addr, namesrv, tally, acked)
                try:
                    await pipe.send(case)
                    answered = len(pipe.sent) % PING_EVERY or await pipe.ping()
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    answered = False
                if not answered:
                    _closed_early(pipe, tally)
                    await pipe.stream.aclose()
                    pipe = None
        finally:
            with trio.CancelScope(shield=True):
                if pipe is not None:
                    await pipe.stream.aclose()
            nursery.cancel_scope.cancel()


async def _open_pipe(nursery, addr, namesrv, tally, acked) -> Pipe:
    stream = await connect(addr, tally)
    pipe = Pipe(stream, namesrv, tally, stream.socket.getsockname()[1], acked=acked)
    nursery.start_soon(pipe.read_answers)
    return pipe


async def _retire(pipe: Pipe, tally: Tally) -> None:
    if not pipe.closed.is_set() and not await pipe.ping():
        _closed_early(pipe, tally)
    rst_close(pipe.stream)
    await pipe.stream.aclose()


def _closed_early(pipe: Pipe, tally: Tally) -> None:
    """A server closed a connection whose requests all decode: worth a look, not a bug by
    itself (the idle timeout, the partial-frames limit)."""
    if pipe.closed.is_set():
        tally.closed_by_server += 1
        tally.structural["pipe-closed-by-server"] += 1


# ---------------------------------------------------------------------- good traffic, probes


async def good_sender(
    broker: str, tally: Tally, pause_s: float = 0.005, prefix: str = "good"
) -> None:
    """Sends (every tenth a batch of three) to the good topic until cancelled; bodies are
    ``<prefix>-<n>[-<k>]``."""
    n = 0
    async with RemotingClient.open() as client:
        while True:
            n += 1
            queue_id = n % 4
            if n % 10 == 0:
                bodies = [f"{prefix}-{n}-{k}".encode() for k in range(3)]
                body = codec.encode_batch_body([(0, b, "") for b in bodies])
                request = send_request(
                    GOOD_TOPIC, body, queue_id=queue_id, code=RequestCode.SEND_BATCH_MESSAGE,
                    batch=True,
                )  # fmt: skip
            else:
                bodies = [f"{prefix}-{n}".encode()]
                request = send_request(GOOD_TOPIC, bodies[0], queue_id=queue_id)
            tally.good_sent += len(bodies)
            try:
                response = await client.invoke(broker, request, HANG_S)
            except (RemotingConnectError, RemotingTimeoutError) as exc:
                tally.good_refused[type(exc).__name__] += len(bodies)
                await trio.sleep(0.1)
                continue
            if response.code in STORED:
                for body in bodies:
                    tally.good_acked[body] = GOOD_TOPIC
            else:
                tally.good_refused[f"{response.code}:{(response.remark or '')[:60]}"] += 1
            await trio.sleep(pause_s)


async def prober(addrs: dict[str, str], tally: Tally, every_s: float = 1.0) -> None:
    """Each server answers something simple every ``every_s``, within HANG_S."""
    async with RemotingClient.open() as client:
        while True:
            for name, addr in addrs.items():
                started = time.monotonic()
                try:
                    await client.invoke(addr, ping_request(name == "namesrv"), HANG_S)
                except RemotingTimeoutError:
                    tally.find("hang", f"{name} did not answer the prober in {HANG_S:g} s")
                    continue
                except RemotingConnectError as exc:
                    tally.find("hang", f"{name} refused the prober: {exc}")
                    continue
                tally.ping(time.monotonic() - started)
            await trio.sleep(every_s)
