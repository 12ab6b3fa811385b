"""ReadSelector: one task reads every connection of a server, as Netty's selector threads do
for a Java broker.

With a task per connection, each request cost two Trio task switches and an ``epoll_ctl`` to
re-arm the socket: a fifth of a busy broker's event loop. Here the connections' sockets sit in
one level-triggered epoll of our own, the task waits for that epoll to become readable, and
reads each ready connection in turn (``Connection.on_readable``). After a round that found
work it writes the round's replies (the sender's ``kick``) and looks again at once, a few
rounds while the pass is short; a busy pass looks again after a plain checkpoint before
waiting: a busy server's next requests are usually in by then, and each Trio pass saved (its
own epoll_wait, deadlines and instruments) is ~5 us. But when the loop has nothing else to
do, that checkpoint would only lead to the look, and Trio's wait would only wait: so after any
pass the selector first tries the idle sleep below, which declines whenever Trio has anything
to do and else returns at once with whatever is ready or sleeps, in place of the checkpoint,
the look and Trio's wait (8 lock-step Python clients: Trio's passes per request 0.53 -> 0.03,
``epoll_wait`` 1.6 -> 0.6). After a pass that answered one read and then found nothing (a
lock-step client waiting for that answer) it looks again only while such looks have often been
finding work (``LoneLooks``), else it waits for readiness at once; while they find nothing it
does not look again within the pass either, so a lone request costs one look, the one that
finds it, and when the loop has nothing else to do the wait for the next one sleeps outside
Trio's wait cycle (``IdleSleep``, remoting/idle_sleep.py), whose epoll names the sockets that
woke it: they are the pass's first round, with no look to find them. While each sleep names
one plain connection whose request is answered at once (lock-step clients), the sleeps and
their reads run in one C call (``serve_lone``, remoting/lone_loop.py), which also serves a
sleep that names several plain connections each bringing one request (a round's common case,
below) and comes back to this loop only for anything else. A connection with too many reply bytes queued leaves the
epoll until they drain, so its peer is not read meanwhile.

When a round finds several connections ready (sync senders on many connections: 3-4 a round
with 8 of them), the requests they brought go to the server's ``round_handler`` together, so
their sends are checked, stored and counted in one group pass, as one connection's pipelined
sends are, instead of one pass each. Each connection is still answered in its own requests'
order, and anything else a read holds (responses, a frame that does not parse) is handled by
that connection alone, as before. Such a round makes no Python call per connection in its
common case: one C call reads the ready connections and stages each one's lone plain request
(``recv_round``), and one hands the round's reply frames to the server's sender
(``finish_round``); a connection whose read brought anything else takes its own path. That
half of the loop is remoting/round_reads.py.

Linux only (``select.epoll``); elsewhere each connection keeps its own reader task.
"""

from __future__ import annotations

import logging
import select
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from remoting.codec_native import native
from remoting.command import EncodedReply
from remoting.frame import Frame
from remoting.idle_sleep import IdleSleep
from remoting.log_limit import bug_tracebacks, log_limited
from remoting.lone_loop import LoneLooksReference, serve_lone_reference
from remoting.receive import answer_lone
from remoting.round_reads import RoundReads
from remoting.writes import WRITE_HIGH_WATER, ThreadWrites

if TYPE_CHECKING:
    from collections.abc import Callable

    from remoting.connection import Connection
    from remoting.round_reads import RoundHandler

log = logging.getLogger(__name__)

MAX_EVENTS = 64
# What answer_lone takes as the common case (remoting/receive.py).
_LONE_KINDS = (Frame, EncodedReply, ThreadWrites, WRITE_HIGH_WATER)
# Rounds a pass may read before it yields to Trio's scheduler (when Trio has anything to do:
# the idle sleep's checks), while it has taken less than PASS_BUDGET_S: the loop's other tasks
# wait at most about that long.
ROUNDS_PER_PASS = 4
PASS_BUDGET_S = 0.001

# Whether looks after a lone read find work (remoting/lone_loop.py), and the lone requests
# served between idle sleeps in one call (its serve_lone_reference says what it returns).
LoneLooks: Any = LoneLooksReference if native is None else native.LoneLooks
serve_lone: Any = serve_lone_reference if native is None else native.serve_lone


class ReadSelector(RoundReads):
    def __init__(
        self, round_handler: RoundHandler | None = None, flush: Callable[[], None] | None = None
    ) -> None:
        """``flush`` writes the replies queued so far (the server's sender's ``kick``), called
        before each further round of a pass; connections without a sender write their own at
        the end of each read."""
        self._flush = flush
        self._epoll = select.epoll()
        self._connections: dict[int, Connection] = {}
        # The connections a round's one read call may read itself (``recv_round``), each as
        # its ``round_entry``.
        self._plain: dict[int, tuple[Connection, Any, int]] = {}
        self._round_handler = round_handler
        self._idle: IdleSleep | None = None  # while running, when Trio is as it knows

    @staticmethod
    def available() -> bool:
        return hasattr(select, "epoll")

    def add(self, connection: Connection) -> None:
        fd = connection.fileno()
        self._connections[fd] = connection
        # A reader without round entries (a test's fake) is read by its own methods only.
        round_entry = getattr(connection, "round_entry", None)
        entry = None if round_entry is None else round_entry()
        if entry is not None:
            self._plain[fd] = entry
        self._epoll.register(fd, select.EPOLLIN)
        if self._idle is not None:
            self._idle.add(fd)

    def remove(self, connection: Connection) -> None:
        """Stop reading it. Call before its socket closes: epoll knows descriptors by number."""
        fd = connection.fileno()
        if self._connections.get(fd) is connection:
            del self._connections[fd]
            self._plain.pop(fd, None)
            if self._idle is not None:
                self._idle.remove(fd)
            try:
                self._epoll.unregister(fd)
            except (OSError, ValueError):  # the selector has stopped
                pass

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        wait_readable, checkpoint = trio.lowlevel.wait_readable, trio.lowlevel.checkpoint
        poll, flush, clock = self._epoll.poll, self._flush, time.perf_counter
        epoll_fd = self._epoll.fileno()
        lone = LoneLooks()
        idle = self._idle = IdleSleep.for_current_run()
        serve = None
        if idle is not None:
            for fd in self._connections:
                idle.add(fd)
            # serve(resumed, lone_look): the idle sleeps, and the lone plain requests and
            # rounds of them they name, until anything else happens (remoting/lone_loop.py).
            serve = partial(
                serve_lone, lone, idle.state, self._connections, self._plain, _LONE_KINDS, flush
            )
        task_status.started()
        try:
            look = lone_look = False
            resumed = True
            while True:
                # When Trio has nothing else to do, its pass before a look would only look and
                # its wait only wait: the idle sleep (it returns at once with whatever is
                # ready, else sleeps) takes their place, after any pass; when it declines,
                # they run as before. A sleep that answers stands in for a look after a lone
                # read: while the sleep answers, such looks (after a checkpoint, or within the
                # pass) save nothing, so it counts as one that found nothing and they stop.
                # One socket woke it: a lone read (a pass would end after it: no clock,
                # budget or look); the next sleep, or Trio's before_io_wait when it declines,
                # kicks the sender for what the read left queued. ``serve`` does all that
                # for as long as the lone reads are plain requests answered at once, and
                # serves a sleep's several plain connections as one round (_read_round's
                # common case); after a round it goes to the next sleep, which returns at once
                # with whatever is ready unless Trio has anything to do, in place of this
                # pass's further looks and the checkpoint after it.
                ready = None
                if serve is not None:
                    got = serve(resumed, lone_look, self._round_handler)
                    if type(got) is tuple and len(got) == 4:  # a round it did not finish
                        resumed = lone_look = False
                        look = True  # as after a pass of several reads
                        self._round_back(got)
                        continue
                    if type(got) is tuple:  # a lone read it did not finish
                        resumed = False
                        self._lone_rest(got)
                        lone_look = look = lone.look_again()
                        continue
                    if type(got) is list:  # several sockets: the pass's first round
                        resumed = lone_look = False
                        ready = got
                    elif got is ...:  # a round last, then the sleep declined
                        resumed = lone_look = False
                        look = True
                    elif got is not None:  # lone reads, then the sleep declined
                        resumed = False
                        lone_look = look = got
                if ready is None:
                    if look:
                        await checkpoint()
                    else:
                        await wait_readable(epoll_fd)
                    resumed = True
                found, more = self._pass(poll, flush, clock, lone, ready)
                if lone_look:  # a look after a lone read (or a probe), through Trio's pass
                    lone.looked(found > 0)
                # Several reads: their peers' next requests are usually in once the loop's
                # other tasks have run. One read: only if such looks have been finding them.
                lone_look = found == 1 and not more
                look = more or found > 1 or (lone_look and lone.look_again())
                lone_look = lone_look and look
        finally:
            if idle is not None:
                self._idle = None
                idle.close()
            self._epoll.close()

    def _lone_rest(self, got: tuple[Any, ...]) -> None:
        """What ``serve_lone`` handed back of a lone read: (fd,) a socket it did not read,
        (connection, answer) ``answer_lone``'s answer to finish, (connection, None, exc) the
        error it raised."""
        if len(got) == 1:
            self._read_lone(got[0])
        elif len(got) == 3:
            self._failed(got[0], got[2])
            self.remove(got[0])
        else:
            self._finish_lone(got[0], got[1])

    def _read_lone(self, fd: int) -> None:
        """The one ready socket's read: a plain connection's read, handler call and reply in
        one call (``answer_lone``), whatever it hands back finished by the connection."""
        connection = self._connections.get(fd)
        if connection is None:
            return
        entry = self._plain.get(fd)
        try:
            if entry is None:
                reading = connection.on_readable()
            else:
                reading = answer_lone(entry, fd, _LONE_KINDS)
        except Exception:
            self._failed(connection)
            reading = False
        self._finish_lone(connection, reading)

    def _finish_lone(self, connection: Connection, reading: Any) -> None:
        """A lone read's outcome: True or False (whether the connection reads on), or what
        ``answer_lone`` left for the connection to finish (``lone_rest``)."""
        if type(reading) is not bool:
            try:
                reading = connection.lone_rest(reading)
            except Exception:
                self._failed(connection)
                reading = False
        if not reading:
            self.remove(connection)

    def _pass(
        self,
        poll: Callable[[float, int], list[tuple[int, int]]],
        flush: Callable[[], None] | None,
        clock: Callable[[], float],
        lone: Any,
        ready: list[tuple[int, int]] | None,
    ) -> tuple[int, bool]:
        """Read rounds until a look finds nothing, up to the pass's bounds: the events found,
        and whether the last look still found some (the bounds ended the pass). ``ready``: the
        first round's events, when the idle sleep's epoll has named them already."""
        start = clock()
        found = 0
        for left in range(ROUNDS_PER_PASS - 1, -1, -1):
            if ready is None:
                events = poll(0, MAX_EVENTS)
            else:
                events, ready = ready, None
            if not events:
                return found, False
            found += len(events)
            self._read_events(events)
            if not left or clock() - start > PASS_BUDGET_S:
                return found, True
            if flush is not None:
                flush()  # the round's replies leave before the next look
            if found == 1 and not lone.paying():
                # A lone read while looks after lone reads find nothing: a lock-step client
                # is still taking this answer, so this look would be an empty epoll_wait per
                # request. Trio's wait sees the next one; the run's probes notice a faster
                # client.
                return found, False
        return found, True

    def _read_events(self, events: list[tuple[int, int]]) -> None:
        if len(events) > 1 and self._round_handler is not None:
            self._read_round(events)
            return
        connections = self._connections
        for fd, _ in events:
            connection = connections.get(fd)
            if connection is None:
                continue
            try:  # a call per read less than a method of its own (a lone request's path)
                reading = connection.on_readable()
            except Exception:
                self._failed(connection)
                reading = False
            if not reading:
                self.remove(connection)

    @staticmethod
    def _failed(connection: Connection, exc: BaseException | None = None) -> None:
        # Only a bug gets here (handlers' errors are answered): that connection goes, the
        # others are still served. ``exc``: the error when it is not the one being handled.
        log_limited(
            log,
            bug_tracebacks,
            "read",
            logging.ERROR,
            "reading failed, closing: peer=%s",
            connection.peer,
            exc_info=True if exc is None else exc,
        )
        connection.close_soon("reading failed")
