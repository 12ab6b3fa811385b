"""Requests that one read brings in go to a code's group processor together (issue 27: the
broker stores pipelined sends in one pass), over real loopback sockets. Each keeps its own
answer, in request order, whatever its neighbours do."""

from __future__ import annotations

import socket

import pytest
import trio

from remoting import writes as writes_module
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.connection import Connection, HandlerResult
from remoting.errors import RequestError
from remoting.frame import FrameDecoder
from remoting.server import RemotingServer
from tests.kits.nativekit import needs_sender

GROUPED, LONE, DENIED = 2001, 2002, 2003


@pytest.fixture(
    params=["reader-tasks", "selector", pytest.param("selector-sender-thread", marks=needs_sender)]
)
def server_io(request: pytest.FixtureRequest) -> dict[str, bool]:
    return {
        "read_selector": request.param != "reader-tasks",
        "native_sender": request.param == "selector-sender-thread",
    }


class Recorder:
    def __init__(self) -> None:
        self.runs: list[list[str]] = []

    def one(self, connection: Connection, request: RemotingCommand) -> HandlerResult:
        self.runs.append([request.ext("v", "")])
        return request.make_response(ext_fields={"v": request.ext("v", "")})

    def group(
        self, connection: Connection, requests: list[RemotingCommand]
    ) -> list[HandlerResult | Exception]:
        self.runs.append([r.ext("v", "") for r in requests])
        out: list[HandlerResult | Exception] = []
        for request in requests:
            v = request.ext("v", "")
            if v.startswith("bad"):
                out.append(RequestError(ResponseCode.MESSAGE_ILLEGAL, f"refused {v}"))
            elif v.startswith("late"):
                out.append(_late(request))
            else:
                out.append(request.make_response(ext_fields={"v": v}))
        return out


async def _late(request: RemotingCommand) -> RemotingCommand:
    await trio.sleep(0.01)
    return request.make_response(ext_fields={"v": request.ext("v", "")})


def _deny(connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
    if request.ext("v", "").startswith("secret"):
        return request.error_response(ResponseCode.NO_PERMISSION, "no access")
    return None


async def _exchange(port: int, requests: list[RemotingCommand]) -> list[RemotingCommand]:
    """All requests in one write; the answers in the order they arrive."""
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    await sock.connect(("127.0.0.1", port))
    with sock:
        await sock.send(b"".join(encode_command_bytes(r) for r in requests))
        decoder, answers = FrameDecoder(), []
        while len(answers) < sum(not r.is_oneway for r in requests):
            data = await sock.recv(65536)
            assert data, "the server closed the connection"
            decoder.receive_data(data)
            answers += [decode_command(f) for f in decoder.frames()]
        return answers


async def test_a_reads_requests_reach_the_group_processor_together_and_answer_in_order(
    nursery: trio.Nursery, server_io: dict[str, bool]
) -> None:
    recorder = Recorder()
    server = RemotingServer("127.0.0.1", 0, authorize=_deny, **server_io)
    server.register(GROUPED, recorder.one)
    server.register_group(GROUPED, recorder.group)
    server.register(LONE, recorder.one)
    port = await nursery.start(server.run)
    values = ["a", "bad1", "late1", "b", "lone:LONE", "c", "secret", "d", "oneway"]
    requests = []
    for v in values:
        code = LONE if v.endswith(":LONE") else GROUPED
        requests.append(RemotingCommand.request(code, {"v": v}, oneway=v == "oneway"))
    answers = await _exchange(port, requests)
    # The oneway request is answered by nothing; everything else in its own order.
    by_opaque = {a.opaque: a for a in answers}
    assert len(answers) == len(values) - 1
    expected = [r for r in requests if not r.is_oneway]
    assert [a.opaque for a in answers if a.opaque != expected[2].opaque] == [
        r.opaque for r in expected if r is not expected[2]
    ]  # the late answer comes when it is ready, the rest at once and in order
    codes = [by_opaque[r.opaque].code for r in expected]
    assert codes == [
        ResponseCode.SUCCESS,
        ResponseCode.MESSAGE_ILLEGAL,
        ResponseCode.SUCCESS,
        ResponseCode.SUCCESS,
        ResponseCode.SUCCESS,
        ResponseCode.SUCCESS,
        ResponseCode.NO_PERMISSION,
        ResponseCode.SUCCESS,
    ]
    assert by_opaque[expected[1].opaque].remark == "refused bad1"
    # Runs split at the request of another code and at the refused one; a lone request
    # between them went to the code's own processor.
    assert recorder.runs == [["a", "bad1", "late1", "b"], ["lone:LONE"], ["c"], ["d", "oneway"]]


async def test_a_group_processor_that_fails_answers_each_of_its_requests(
    nursery: trio.Nursery, server_io: dict[str, bool]
) -> None:
    def broken(
        connection: Connection, requests: list[RemotingCommand]
    ) -> list[HandlerResult | Exception]:
        raise ZeroDivisionError("group bug")

    server = RemotingServer("127.0.0.1", 0, **server_io)
    server.register(GROUPED, Recorder().one)
    server.register_group(GROUPED, broken)
    port = await nursery.start(server.run)
    requests = [RemotingCommand.request(GROUPED, {"v": str(i)}) for i in range(3)]
    answers = await _exchange(port, requests)
    assert [a.opaque for a in answers] == [r.opaque for r in requests]
    assert {a.code for a in answers} == {ResponseCode.SYSTEM_ERROR}


class RoundRecorder:
    """A group processor that records which connection sent each request of each run."""

    def __init__(self) -> None:
        self.runs: list[list[tuple[str, str]]] = []

    def one(self, connection: Connection, request: RemotingCommand) -> HandlerResult:
        self.runs.append([(connection.peer, request.ext("v", ""))])
        return request.make_response(ext_fields={"v": request.ext("v", "")})

    def group(
        self,
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | Exception]:
        owners = connections or [connection] * len(requests)
        self.runs.append([(c.peer, r.ext("v", "")) for c, r in zip(owners, requests, strict=True)])
        out: list[HandlerResult | Exception] = []
        for request in requests:
            v = request.ext("v", "")
            if v.endswith("bad"):
                out.append(RequestError(ResponseCode.MESSAGE_ILLEGAL, f"refused {v}"))
            else:
                out.append(request.make_response(ext_fields={"v": v}))
        return out


def _read_answers(sock: socket.socket, count: int) -> list[RemotingCommand]:
    decoder, answers = FrameDecoder(), []
    while len(answers) < count:
        data = sock.recv(65536)
        assert data, "the server closed the connection"
        decoder.receive_data(data)
        answers += [decode_command(f) for f in decoder.frames()]
    return answers


async def _ready_clients(port: int, count: int) -> list[socket.socket]:
    """Blocking client sockets, each answered once (so the selector reads it already)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.settimeout(10)
        # Each write leaves at once (no Nagle wait for an ACK the server delays).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        probe = RemotingCommand.request(GROUPED, {"v": "probe"})
        sock.sendall(encode_command_bytes(probe))
        socks.append(sock)
    for sock in socks:
        await trio.to_thread.run_sync(_read_answers, sock, 1)
    return socks


async def test_requests_of_connections_ready_in_one_round_go_to_the_group_processor_together(
    nursery: trio.Nursery,
) -> None:
    """Sync senders on many connections (issue 27): what every ready connection brought goes
    to the group processor in one run, and each connection is answered in its own order."""
    recorder = RoundRecorder()

    def deny(connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.ext("v", "").endswith("secret"):
            return request.error_response(ResponseCode.NO_PERMISSION, "no access")
        return None

    server = RemotingServer("127.0.0.1", 0, read_selector=True, authorize=deny)
    server.register(GROUPED, recorder.one)
    server.register_group(GROUPED, recorder.group)
    port = await nursery.start(server.run)
    socks = await _ready_clients(port, 4)
    recorder.runs.clear()
    sent: list[list[RemotingCommand]] = []
    try:
        # Every connection's requests are written before the server's task runs again
        # (loopback delivers at once), so one selector round finds all four ready.
        for index, sock in enumerate(socks):
            values = [f"c{index}-{n}" for n in range(3)]
            if index == 1:
                values[1] = "c1-bad"
            if index == 2:
                values[1] = "c2-secret"  # refused by the access hook, in the middle
            requests = [RemotingCommand.request(GROUPED, {"v": v}) for v in values]
            sock.sendall(b"".join(encode_command_bytes(r) for r in requests))
            sent.append(requests)
        for sock, requests in zip(socks, sent, strict=True):
            answers = await trio.to_thread.run_sync(_read_answers, sock, len(requests))
            assert [a.opaque for a in answers] == [r.opaque for r in requests]
            for request, answer in zip(requests, answers, strict=True):
                v = request.ext("v", "")
                if v.endswith("bad"):
                    assert (answer.code, answer.remark) == (
                        ResponseCode.MESSAGE_ILLEGAL,
                        f"refused {v}",
                    )
                elif v.endswith("secret"):
                    assert answer.code == ResponseCode.NO_PERMISSION
                else:
                    assert (answer.code, answer.ext("v", "")) == (ResponseCode.SUCCESS, v)
    finally:
        for sock in socks:
            sock.close()
    # One run held several connections' requests, and within every run each connection's
    # requests kept their order.
    assert any(len({peer for peer, _ in run}) > 1 for run in recorder.runs), recorder.runs
    got = [v for run in recorder.runs for _, v in run]
    assert sorted(got) == sorted(
        r.ext("v", "") for rs in sent for r in rs if "secret" not in r.ext("v", "")
    )
    for index in range(4):
        mine = [v for v in got if v.startswith(f"c{index}-")]
        assert mine == [r.ext("v", "") for r in sent[index] if "secret" not in r.ext("v", "")]


def _echo_v(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(ext_fields={"v": request.ext("v", "")})


@pytest.mark.parametrize(
    "native_sender", [False, pytest.param(True, marks=needs_sender)], ids=["loop", "thread"]
)
async def test_lone_requests_of_a_round_get_the_reply_frames_their_group_encoded(
    nursery: trio.Nursery, native_sender: bool
) -> None:
    """Sync senders on many connections: each ready connection brought one request, and the
    group processor answered with reply frames it encoded itself (bytes, as the broker's plain
    sends do). Each connection gets its own frame; a oneway request gets none."""
    rounds: list[int] = []

    def group(
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | bytes | Exception]:
        rounds.append(len(requests))
        return [encode_command_bytes(_echo_v(connection, r)) for r in requests]

    server = RemotingServer("127.0.0.1", 0, read_selector=True, native_sender=native_sender)
    server.register(GROUPED, _echo_v)
    server.register_group(GROUPED, group)
    port = await nursery.start(server.run)
    socks = await _ready_clients(port, 4)
    rounds.clear()
    try:
        for step in range(8):
            sent = []
            for index, sock in enumerate(socks):
                oneway = index == 3 and step % 2 == 0
                request = RemotingCommand.request(GROUPED, {"v": f"c{index}-{step}"}, oneway=oneway)
                sock.sendall(encode_command_bytes(request))
                sent.append(None if oneway else request)
            for sock, request in zip(socks, sent, strict=True):
                if request is None:
                    continue
                (answer,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
                assert (answer.opaque, answer.ext("v", "")) == (request.opaque, request.ext("v"))
    finally:
        for sock in socks:
            sock.close()
    assert any(size > 1 for size in rounds), rounds  # some rounds held several connections


@pytest.mark.parametrize("encoded", [False, True], ids=["commands", "frames"])
@pytest.mark.parametrize(
    "native_sender", [False, pytest.param(True, marks=needs_sender)], ids=["loop", "thread"]
)
async def test_in_rounds_a_peer_that_stops_reading_pauses_alone(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch, native_sender: bool, encoded: bool
) -> None:
    """Back-pressure per connection still holds when connections are read in rounds: a peer
    that reads none of its big replies is not read past the high-water mark, and the peers
    ready in the same rounds keep being answered; so too when the group answers with reply
    frames it encoded (a plain send's, each connection's lone request finished straight)."""
    monkeypatch.setattr(writes_module, "WRITE_HIGH_WATER", 1 << 20)
    handled: list[str] = []

    def one(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        handled.append(request.ext("v", ""))
        size = 512 * 1024 if request.ext("v", "") == "big" else 0
        return request.make_response(body=bytes(size))

    def group(
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | bytes | Exception]:
        replies = [one(connection, r) for r in requests]
        if encoded:
            return [encode_command_bytes(reply) for reply in replies]
        return list(replies)

    server = RemotingServer("127.0.0.1", 0, native_sender=native_sender)
    server.register(GROUPED, one)
    server.register_group(GROUPED, group)
    port = await nursery.start(server.run)
    slow, *fast = await _ready_clients(port, 3)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    handled.clear()
    bigs = 0
    try:
        with trio.fail_after(60):
            # Each step writes one big request on the slow connection and one small one on
            # each fast connection, then waits for the fast answers only. 64 steps queue
            # 32 MiB: far past the mark and what the kernel's buffers take.
            for _ in range(64):
                request = RemotingCommand.request(GROUPED, {"v": "big"})
                slow.sendall(encode_command_bytes(request))
                bigs += 1
                small = [RemotingCommand.request(GROUPED, {"v": "small"}) for _ in fast]
                for sock, r in zip(fast, small, strict=True):
                    sock.sendall(encode_command_bytes(r))
                for sock, r in zip(fast, small, strict=True):
                    (answer,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
                    assert answer.opaque == r.opaque
                if handled.count("big") < bigs:
                    break  # the slow connection has left the epoll
                await trio.sleep(0)
            else:
                raise AssertionError(f"the slow peer was still read after {bigs} big replies")
            assert handled.count("big") >= 2  # past 1 MiB of queued replies
            for _ in range(5):  # the others are still served meanwhile
                small = [RemotingCommand.request(GROUPED, {"v": "small"}) for _ in fast]
                for sock, r in zip(fast, small, strict=True):
                    sock.sendall(encode_command_bytes(r))
                for sock, r in zip(fast, small, strict=True):
                    (answer,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
                    assert answer.opaque == r.opaque
            assert handled.count("big") == bigs - 1
            # Reading the backlog lets the server read the slow peer again: every big
            # request is answered.
            answers = await trio.to_thread.run_sync(_read_answers, slow, bigs)
            assert all(a.code == ResponseCode.SUCCESS for a in answers)
            assert handled.count("big") == bigs
    finally:
        for sock in (slow, *fast):
            sock.close()


async def test_a_response_read_in_a_round_answers_the_servers_call(nursery: trio.Nursery) -> None:
    """A server also calls its clients (the broker's transaction checks): a client's response
    read in the same round as other connections' requests completes that call, and the
    requests are answered as usual."""
    recorder = RoundRecorder()
    server = RemotingServer("127.0.0.1", 0, read_selector=True)
    server.register(GROUPED, recorder.one)
    server.register_group(GROUPED, recorder.group)
    port = await nursery.start(server.run)
    called, *others = await _ready_clients(port, 3)
    try:
        (caller,) = [
            c for c in server.connections if c.peer.endswith(f":{called.getsockname()[1]}")
        ]
        call = RemotingCommand.request(LONE, {"v": "ask"})
        got: list[RemotingCommand] = []
        done = trio.Event()

        async def ask() -> None:
            got.append(await caller.invoke(call, 10))
            done.set()

        nursery.start_soon(ask)
        (asked,) = await trio.to_thread.run_sync(_read_answers, called, 1)
        assert asked.opaque == call.opaque and not asked.is_response
        answer = asked.make_response(ext_fields={"v": "told"})
        requests = [RemotingCommand.request(GROUPED, {"v": f"o{i}"}) for i in range(len(others))]
        # The response and the other connections' requests arrive together: one round.
        called.sendall(encode_command_bytes(answer))
        for sock, request in zip(others, requests, strict=True):
            sock.sendall(encode_command_bytes(request))
        for sock, request in zip(others, requests, strict=True):
            (reply,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
            assert (reply.opaque, reply.ext("v", "")) == (request.opaque, request.ext("v", ""))
        with trio.fail_after(10):
            await done.wait()
        assert got[0].ext("v", "") == "told"
    finally:
        for sock in (called, *others):
            sock.close()


@pytest.mark.parametrize("round_of", [1, 2], ids=["alone", "in-a-round"])
async def test_a_read_that_is_a_frame_by_itself_still_ends_the_partial_one_before_it(
    nursery: trio.Nursery, round_of: int
) -> None:
    """A read is taken as one whole frame only while nothing is held (the C read's judgement,
    remoting/receive.py recv_command): the tail of a frame whose first part came in an earlier
    read ends that frame, though the tail alone would parse as a request of its own."""

    def group(
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | Exception]:
        return [_echo_v(connection, r) for r in requests]

    server = RemotingServer("127.0.0.1", 0, read_selector=True)
    server.register(GROUPED, _echo_v)
    server.register_group(GROUPED, group)
    port = await nursery.start(server.run)
    socks = await _ready_clients(port, round_of)
    inner = encode_command_bytes(RemotingCommand.request(GROUPED, {"v": "inner"}))
    outer = RemotingCommand.request(GROUPED, {"v": "outer"}, body=b"pad" + inner)
    data = encode_command_bytes(outer)
    assert data.endswith(inner)
    head = data[: -len(inner)]
    try:
        socks[0].sendall(head)
        with trio.fail_after(10):
            while server.budget.total < len(head):  # the server holds the head
                await trio.sleep(0.001)
        socks[0].sendall(inner)
        others = [RemotingCommand.request(GROUPED, {"v": "other"}) for _ in socks[1:]]
        for sock, request in zip(socks[1:], others, strict=True):
            sock.sendall(encode_command_bytes(request))
        (answer,) = await trio.to_thread.run_sync(_read_answers, socks[0], 1)
        assert (answer.opaque, answer.ext("v", "")) == (outer.opaque, "outer")
        for sock, request in zip(socks[1:], others, strict=True):
            (answer,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
            assert answer.opaque == request.opaque
    finally:
        for sock in socks:
            sock.close()
