"""How a Connection reads: what one read holds becomes commands, handled together, and the
read batch ends (split out of remoting/connection.py, whose class mixes this in; see its
docstring for the rules).

A read batch: replies queued while a read's commands are handled wait for its end and leave in
one write; then a protocol error closes the connection, the partial frame is reported to the
server's budget, and reading pauses while too many reply bytes or requests are in flight. The
selector reads a connection alone (``on_readable``) or, when a round found several ready, in
two steps (``stage_read`` returns the read's requests unanswered, ``finish_staged`` answers
them with the round's results), so several connections' requests are handled as one group.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from remoting import writes as _writes
from remoting.command import (
    RPC_ONEWAY,
    RPC_RESPONSE,
    EncodedReply,
    RemotingCommand,
    decode_declined,
    encode_command,
)
from remoting.errors import RemoteProtocolError
from remoting.frame import Frame, FrameDecoder
from remoting.memory import trim
from remoting.receive import READ_CHUNK as READ_CHUNK  # the server's budget floor uses it
from remoting.receive import recv_command
from remoting.receive import take_commands as take_commands  # bench/bench_split.py times it
from remoting.round_finish import finish_plain_round
from remoting.writes import ThreadWrites, reply_round

if TYPE_CHECKING:
    from remoting.budget import PartialFrameBudget
    from remoting.handling import HandlerResult
    from remoting.in_flight import InFlight
    from remoting.selector import ReadSelector
    from remoting.writes import LoopWrites

# The connection's logger: operators filter on it, and this is still the connection speaking.
log = logging.getLogger("remoting.connection")


def finish_round(
    owners: list[ReadBatches],
    staged: list[RemotingCommand],
    results: list[HandlerResult | bytes | Exception],
    failed: Callable[[ReadBatches, BaseException | None], None],
) -> list[ReadBatches]:
    """``finish_lone`` for each connection of a selector round (``staged[i]`` the one request
    ``owners[i]`` staged, ``results[i]`` its result), in one loop: the reply frames (a plain
    send's) for open connections whose replies the server's sender writes are handed to it
    in one call (``reply_round``), their read batches ended and the pause checked as
    ``finish_lone`` does; anything else takes ``finish_lone``. Returns the connections that
    leave the selector (finished, or paused); one that raises goes to ``failed`` (with the
    exception when it is not the one being handled), the others are still answered."""
    w = owners[0]._writes if owners else None
    if type(w) is ThreadWrites:
        # A round of reply frames (plain sends), the common case under sync senders: one
        # call for every connection; only what it hands back is looked at here
        tail = finish_plain_round(
            owners, staged, results, ThreadWrites, w._sender, _writes.WRITE_HIGH_WATER
        )
        if tail is not None:
            return finish_tail(owners, tail, failed) if tail else []
    leaving: list[ReadBatches] = []
    fast: list[ReadBatches] = []
    frames: list[bytes] = []
    for connection, request, result in zip(owners, staged, results, strict=True):
        if (
            type(result) is bytes
            and not connection.closed
            and not request.flag & RPC_ONEWAY
            and type(connection._writes) is ThreadWrites
        ):
            fast.append(connection)
            frames.append(result)
            continue
        try:
            if not connection.finish_lone(request, result):
                leaving.append(connection)
        except Exception:
            failed(connection, None)
            leaving.append(connection)
    if not fast:
        return leaving
    writes = [connection._writes for connection in fast]
    broken = reply_round(writes, frames)  # type: ignore[arg-type]
    for index, exc in broken:
        failed(fast[index], exc)
        leaving.append(fast[index])
    for connection, w in zip(fast, writes, strict=True):
        connection._in_read_batch = False
        _check_pause(connection, w, failed, leaving)
    return leaving


def finish_tail(
    owners: list[ReadBatches],
    tail: list[tuple[int, Any]],
    failed: Callable[[ReadBatches, BaseException | None], None],
) -> list[ReadBatches]:
    """``finish_round``'s end for the connections ``finish_plain_round`` handed back: (i, None)
    answered, its pause to look at; (i, answer) the sender's answer still to take; (i, an
    exception) a bug met taking it."""
    leaving: list[ReadBatches] = []
    for index, answer in tail:
        connection = owners[index]
        w = connection._writes
        if answer is not None:
            try:
                if isinstance(answer, Exception) and not isinstance(
                    answer, (OSError, RuntimeError)
                ):
                    raise answer
                w._sent(answer)  # type: ignore[union-attr]
            except Exception as exc:
                failed(connection, exc)
                leaving.append(connection)
            connection._in_read_batch = False
        _check_pause(connection, w, failed, leaving)
    return leaving


def _check_pause(
    connection: ReadBatches,
    w: Any,
    failed: Callable[[ReadBatches, BaseException | None], None],
    leaving: list[ReadBatches],
) -> None:
    """An answered connection of a round: if still open with its in-flight table full or its
    writes paused, whether it keeps reading (``leaving`` gets it when not, or when that
    raises)."""
    if connection.closed:  # a failed write (closing, as reply's) or a bug above
        return
    if connection._in_flight.full or w.paused:
        try:
            if not connection._keep_reading():
                leaving.append(connection)
        except Exception:
            failed(connection, None)
            leaving.append(connection)


class ReadBatches:
    """Connection's reading side; the attributes are the connection's."""

    closed: bool
    secure: bool
    peer: str
    group_handler: Any
    request_handler: Any
    _sock: socket.socket
    _decoder: FrameDecoder
    _in_flight: InFlight
    _writes: LoopWrites | ThreadWrites
    _nursery: trio.Nursery | None
    _selector: ReadSelector | None
    _budget: PartialFrameBudget | None
    _held: int
    _last_io: float
    _ios: int
    _in_read_batch: bool

    if TYPE_CHECKING:

        def _mark_closed(self, reason: str) -> None: ...
        def close_soon(self, reason: str) -> None: ...
        def warn_peer(self, message: str, *args: Any) -> None: ...
        def _on_command(self, command: RemotingCommand) -> None: ...
        def _complete(self, request: RemotingCommand, result: Any) -> None: ...
        def _failure_response(self, request: RemotingCommand, exc: Exception) -> Any: ...
        def send_nowait(self, command: Any) -> None: ...
        def _on_commands(self, commands: list[RemotingCommand]) -> None: ...
        def _answer_group(self, requests: list[RemotingCommand], results: list[Any]) -> None: ...

    def on_readable(self) -> bool:
        """The selector found the socket readable. False: take it out of the selector (the
        connection is finished, or reading pauses until its queued replies drain).

        A read that is exactly one whole frame with nothing buffered before it (every lone
        request: a sync send, a pull) is decoded, handled and its read batch ended here,
        without the decoder's buffer, the lists of a batch or the partial-frame budget (it
        leaves no partial frame); anything else takes ``_received``."""
        if self.closed:
            return False
        decoder = self._decoder
        try:
            got = recv_command(self._sock, Frame, decoder.max_frame_bytes, decoder.empty)
        except OSError as exc:
            got = exc
        return self.took(got)

    def took(self, got: Any) -> bool:
        """``on_readable`` after its read: ``got`` is what ``recv_command`` returned or the
        OSError it raised."""
        if type(got) is bytes:
            if got and self._received(got) is None:
                return False
            return self._keep_reading()
        if got is None:
            self._mark_closed("peer closed the connection")
            return False
        if isinstance(got, OSError):
            self._mark_closed(f"read failed: {got!r}")
            return False
        # No read bytes for _end_read's TLS hint: a whole frame (at most 64 KiB) cannot be a
        # ClientHello, whose first bytes read as a 369 MB length.
        return self._answer_lone(got, b"")

    def lone_rest(self, rest: Any) -> bool:
        """What remains of a lone read after ``answer_lone`` (remoting/receive.py) handed it
        back: Ellipsis, nothing read (``on_readable``); (got,), the read's result (``took``);
        (command, result, exception), its handler's answer (``answered``)."""
        if rest is ...:
            return self.on_readable()
        if len(rest) == 1:
            return self.took(rest[0])
        return self.answered(*rest)

    def _answer_lone(self, frame: Frame | RemotingCommand, data: bytes) -> bool:
        """A read of one whole frame (or its command, scanned as it was split: ``whole_command``),
        straight through: decode it, run its handler, queue the reply (``_dispatch`` and
        ``send_nowait``, inline), end the read batch. ``on_readable``'s answer."""
        self._ios += 1
        self._in_read_batch = True
        try:
            command = decode_declined(frame) if type(frame) is Frame else frame
        except RemoteProtocolError as exc:
            self._end_read(str(exc), data)
            return False
        except BaseException:
            self._end_read(None, data)
            raise
        handler = self.request_handler
        if command.flag & RPC_RESPONSE or handler is None:
            try:
                self._on_command(command)
            finally:
                self._end_lone()
            return self._lone_read_on()
        try:
            result = handler(self, command)
        except Exception as exc:
            return self.answered(command, None, exc)
        except BaseException:
            self._end_lone()
            raise
        return self.answered(command, result, None)

    def answered(
        self, command: RemotingCommand, result: HandlerResult, exc: Exception | None
    ) -> bool:
        """A lone request's end, its read batch begun and its handler run (``result``, or the
        exception it raised): the reply queued and written, the batch ended."""
        try:
            if exc is not None:
                result = self._failure_response(command, exc)
            kind = type(result)
            if kind is EncodedReply and not self.closed and not command.flag & RPC_ONEWAY:
                # A reply the processor encoded (a found pull's, a lone plain send's):
                # queued and written in one call, the read having counted the I/O.
                self._in_read_batch = False
                if self._writes.answer(result.buffers) and not self._in_flight.full:  # type: ignore[union-attr]
                    return True
                return self._keep_reading()
            if kind is RemotingCommand or kind is EncodedReply:  # ready at once
                if command.flag & RPC_ONEWAY:
                    pass
                elif self.closed:
                    self.send_nowait(result)  # type: ignore[arg-type]  # dropped, as it logs
                else:
                    self._writes.queue(
                        encode_command(result) if kind is RemotingCommand else result.buffers  # type: ignore[union-attr,arg-type]
                    )
            else:
                self._complete(command, result)
        finally:
            self._end_lone()
        return self._lone_read_on()

    def _end_lone(self) -> None:
        """A lone request's read batch ends (if still open): what it queued is written."""
        if self._in_read_batch:
            self._in_read_batch = False
            if not self.closed:
                self._writes.flush()

    def _lone_read_on(self) -> bool:
        if self._in_flight.full or not self._writes.drained.is_set():
            return self._keep_reading()
        return True

    def stage_read(self) -> list[RemotingCommand] | RemotingCommand | bool:
        """``on_readable`` for a selector round of several connections: when the read holds
        requests only (and the server groups them), they are returned unanswered, and the
        connection waits in its read batch for their results; whatever else was read is
        handled here, and the bool is ``on_readable``'s answer.

        A read that is one whole scanned request with nothing buffered before it (a sync
        sender's) returns that command itself, for ``finish_lone``; several requests come as
        a list, for ``finish_staged``."""
        if self.closed:
            return False
        decoder = self._decoder
        try:
            got = recv_command(self._sock, Frame, decoder.max_frame_bytes, decoder.empty)
        except OSError as exc:
            got = exc
        return self.stage_got(got)

    def round_entry(self) -> tuple[ReadBatches, FrameDecoder, int] | None:
        """What a selector round's one read call (remoting/receive.py ``recv_round``) needs to
        read this connection itself, or None when its reads must come through ``stage_read``:
        TLS (its bytes are records), or no group handler to hand its requests to."""
        if self.secure or not (self.group_handler and self.request_handler):
            return None
        decoder = self._decoder
        return (self, decoder, decoder.max_frame_bytes)

    def stage_got(self, got: Any) -> list[RemotingCommand] | RemotingCommand | bool:
        """``stage_read`` after its read: ``got`` is what ``recv_command`` returned, the
        OSError it raised, or another exception of ``recv_round``'s (raised here, so that the
        selector closes this connection alone)."""
        if isinstance(got, BaseException):
            if isinstance(got, OSError):
                self._mark_closed(f"read failed: {got!r}")
                return False
            raise got
        data = b""
        if type(got) is bytes:
            if not got:
                return self._keep_reading()
            data = got
            commands, problem = self._take_commands(data)
        elif got is None:
            self._mark_closed("peer closed the connection")
            return False
        else:
            # One whole frame, or its scanned command: nothing was buffered, and nothing is
            # left to report to the budget (``finish_lone`` needs no ``_end_read``).
            self._ios += 1
            self._in_read_batch = True
            if type(got) is Frame:
                command, problem = self._decode_lone(got, data)
            else:
                command, problem = got, None
            if (
                command is not None
                and not command.flag & RPC_RESPONSE
                and self.group_handler
                and self.request_handler
            ):
                return command
            commands = [] if command is None else [command]
        if problem is None and commands and self.group_handler and self.request_handler:
            for command in commands:
                if command.flag & RPC_RESPONSE:
                    break
            else:
                return commands
        if self._handle_read(commands, problem, data) is None:
            return False
        return self._keep_reading()

    def finish_lone(
        self, request: RemotingCommand, result: HandlerResult | bytes | Exception
    ) -> bool:
        """``finish_staged`` for the one request ``stage_read`` returned itself, in a round of
        several connections: a reply frame the round's handler encoded (a plain send) goes to
        the writes straight (``LoopWrites.reply``, ``ThreadWrites.reply``); anything else, or
        a connection closed meanwhile, takes ``finish_staged``. ``on_readable``'s answer."""
        if type(result) is not bytes or self.closed:
            return self.finish_staged([request], [result])
        self._in_read_batch = False
        writes = self._writes
        if request.flag & RPC_ONEWAY:
            writes.flush()  # what else the read batch queued
        else:
            writes.reply(result)
        if self._in_flight.full or not writes.drained.is_set():
            return self._keep_reading()
        return True

    def finish_staged(
        self,
        requests: list[RemotingCommand],
        results: list[HandlerResult | bytes | Exception] | None,
    ) -> bool:
        """Answer what ``stage_read`` returned, in order, and end the read batch (``results``
        None: handle them here, as a read of this connection alone). ``on_readable``'s answer."""
        if results is None:
            reading = self._handle_read(requests, None, b"")
        else:
            try:
                # A lone request's reply frame, encoded by the round's handler (a plain send):
                # what _answer_group and send_many_nowait would queue, without their lists.
                if len(results) == 1 and type(results[0]) is bytes and not self.closed:
                    if not requests[0].flag & RPC_ONEWAY:
                        self._writes.queue(results)  # type: ignore[arg-type]
                else:
                    self._answer_group(requests, results)
            finally:
                reading = self._end_read(None, b"")
        if reading is None:
            return False
        return self._keep_reading()

    def _keep_reading(self) -> bool:
        if self._in_flight.full or not self._writes.drained.is_set():
            assert self._nursery is not None
            self._nursery.start_soon(self._read_when_resumed)
            return False
        return True

    async def _read_when_resumed(self) -> None:
        await self._until_reading_resumes()
        if not self.closed and self._selector is not None:
            self._selector.add(self)

    def _reading_paused(self) -> bool:
        return self._in_flight.full or not self._writes.drained.is_set()

    async def _until_reading_resumes(self) -> None:
        while not self.closed and self._reading_paused():
            if not self._writes.drained.is_set():
                await self._writes.drained.wait()
            else:
                await self._in_flight.wait_finished()

    def _read_once(self) -> bool | None:
        """Read what the socket holds and handle the commands in it. None once the connection
        is finished; else whether reading again at once may find more."""
        data = self._recv()
        if data is None:
            return None
        if not data:
            return False
        commands, problem = self._take_commands(data)
        return self._handle_read(commands, problem, data)

    def _recv(self) -> bytes | None:
        """What the socket holds: b"" when nothing yet, None once the connection is finished."""
        try:
            data = self._sock.recv(READ_CHUNK)
        except BlockingIOError:
            return b""
        except OSError as exc:
            self._mark_closed(f"read failed: {exc!r}")
            return None
        if not data:
            self._mark_closed("peer closed the connection")
            return None
        return data

    def _received(self, data: bytes) -> bool | None:
        """Handle the commands in what was read. None once the connection is finished; else
        whether reading again at once may find more."""
        commands, problem = self._take_commands(data)
        return self._handle_read(commands, problem, data)

    def _take_commands(self, data: bytes) -> tuple[list[RemotingCommand], str | None]:
        """Every command of the read, up to a frame that does not parse (the problem), and the
        read batch begun: replies wait for its end (``_end_read``)."""
        self._last_io = trio.current_time()
        self._decoder.receive_data(data)
        self._in_read_batch = True
        commands: list[RemotingCommand] = []
        try:
            take_commands(self._decoder, commands)
        except RemoteProtocolError as exc:
            return commands, str(exc)
        except BaseException:
            self._end_read(None, data)
            raise
        return commands, None

    def _decode_lone(self, frame: Frame, data: bytes) -> tuple[RemotingCommand | None, str | None]:
        """The command of a read that is one whole frame the scan declined (``whole_command``),
        or the protocol error it raises."""
        try:
            return decode_declined(frame), None
        except RemoteProtocolError as exc:
            return None, str(exc)
        except BaseException:
            self._end_read(None, data)
            raise

    def _handle_read(
        self, commands: list[RemotingCommand], problem: str | None, data: bytes
    ) -> bool | None:
        """Handle a read's commands together and end its batch (``_received``'s answer)."""
        try:
            if len(commands) == 1:  # a lone request: no grouping to do
                self._on_command(commands[0])
            elif commands:
                self._on_commands(commands)
        finally:
            reading = self._end_read(problem, data)
        return reading

    def _end_read(self, problem: str | None, data: bytes) -> bool | None:
        """The read batch's end: close on a protocol error, write the batch's replies, report
        a partial frame to the budget. ``_received``'s answer."""
        try:
            if problem is not None:
                if not self.secure and data[:1] == b"\x16":
                    # Java's "Clients intend to establish an SSL connection while this server
                    # is running in SSL disabled mode": a ClientHello read as a 369 MB frame
                    # length.
                    problem = "a TLS handshake on a port without TLS (tls.server.mode=disabled)"
                self.warn_peer("protocol error, closing: peer=%s error=%s", self.peer, problem)
                self._mark_closed(f"protocol error: {problem}")
        finally:
            self._in_read_batch = False
            written = self.closed or self._writes.flush()
        if problem is not None:
            return None
        held = self._decoder.buffered_bytes
        if held != self._held and self._budget is not None and not self._hold_partial(held):
            return None
        # A reply still waiting for the sender's thread: the peer's next request cannot be in.
        return written

    def _hold_partial(self, held: int) -> bool:
        """Tell the budget what our partial frame holds now; over it, close the stalest holder.
        False when that was this connection."""
        budget = self._budget
        assert budget is not None
        budget.change(self, self._held, held, self._last_io)
        self._held = held
        while budget.over:
            stalest = budget.stalest()
            if not isinstance(stalest, ReadBatches):
                break
            stalest.warn_peer(
                "partial frames over serverPartialFramesMaxBytes=%d, closing the stalest: "
                "peer=%s held=%d idle_s=%.1f total=%d",
                budget.limit,
                stalest.peer,
                stalest._held,
                budget.idle_s(stalest, self._last_io),
                budget.total,
            )
            stalest.close_soon("partial frames over the server's limit")
        return not self.closed

    def _release_partial(self) -> None:
        budget = self._budget
        assert budget is not None
        budget.change(self, self._held, 0, self._last_io)
        self._held = 0
        if budget.take_trim():
            trim()
