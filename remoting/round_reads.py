"""RoundReads: the selector's rounds (remoting/selector.py ReadSelector, which is one). When
several connections are ready at once, each is read, and the requests they staged go to the
server's round handler together, so that one store pass takes every ready connection's sends;
each connection is still answered in its own requests' order. ``serve_lone``'s C loop serves
a round's common case itself (remoting/lone_loop.py) and hands anything else back at the step
where it stopped: ``_round_back`` finishes it from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remoting.frame import Frame
from remoting.reading import finish_round, finish_tail
from remoting.receive import recv_round

if TYPE_CHECKING:
    from collections.abc import Callable

    from remoting.command import RemotingCommand
    from remoting.connection import Connection, HandlerResult

    # One result per request: requests[i] came from connections[i] (RemotingServer.handle_round).
    RoundHandler = Callable[
        [list[Connection], list[RemotingCommand]], list[HandlerResult | bytes | Exception]
    ]


class RoundReads:
    """The round half of the selector; the selector keeps its connections, round entries and
    round handler, and says how a connection leaves (``remove``) and how a read's bug is
    answered (``_failed``)."""

    _connections: dict[int, Connection]
    _plain: dict[int, tuple[Connection, Any, int]]
    _round_handler: RoundHandler | None
    remove: Callable[[Connection], None]
    _failed: Callable[..., None]

    def _read_round(self, events: list[tuple[int, int]]) -> None:
        """Read every ready connection, then hand the requests they staged to the round
        handler together and give each connection its results."""
        # staged[i] is what owners[i] staged: one request (a sync sender's, the common case)
        # or a list of them (``many``). The plain connections' lone requests come staged
        # from one call; the rest (anything else a read brought, or a connection it did not
        # read) take each connection's own path, as their reads would have alone.
        owners, staged, rest = recv_round(events, self._connections, self._plain, Frame)
        self._round_staged(owners, staged, rest)

    def _round_back(self, got: tuple[int, list[Any], list[Any], Any]) -> None:
        """What ``serve_lone`` handed back of a round, finished from the step where it stopped
        (remoting/lone_loop.py serve_round_reference): 0 after the reads, 1 after the round
        handler, 2 after the sender took the replies."""
        step, owners, staged, what = got
        if step == 0:
            self._round_staged(owners, staged, what)
        elif step == 1:
            self._round_finish(owners, staged, what)
        else:
            for connection in finish_tail(owners, what, self._failed):
                self.remove(connection)

    def _round_staged(
        self, owners: list[Connection], staged: list[Any], rest: list[tuple[Any, Any]]
    ) -> None:
        """``_read_round`` from its reads on: the rest staged by each connection's own path,
        then the round handed over."""
        many = False
        for connection, read in rest:
            try:
                got = connection.stage_read() if read is ... else connection.stage_got(read)
            except Exception:
                self._failed(connection)
                got = False
            if got is False:
                self.remove(connection)
            elif got is not True:
                owners.append(connection)
                staged.append(got)
                if type(got) is list:
                    many = True
        if len(owners) == 1:  # alone after all: answered as a read of its own
            got = staged[0]
            self._finish(owners[0], got if type(got) is list else [got], None)
            return
        if not owners:
            return
        if many:
            self._finish_many(owners, staged)
            return
        assert self._round_handler is not None
        try:
            results = self._round_handler(owners, staged)
        except Exception as exc:  # a bug: every request of the round answers it
            results = [exc] * len(staged)
        self._round_finish(owners, staged, results)

    def _round_finish(
        self, owners: list[Connection], staged: list[Any], results: list[Any]
    ) -> None:
        for connection in finish_round(owners, staged, results, self._failed):
            self.remove(connection)

    def _finish_many(self, owners: list[Connection], staged: list[Any]) -> None:
        """``_read_round``'s hand-over when some connection staged several requests."""
        groups = [got if type(got) is list else [got] for got in staged]
        flat = [request for requests in groups for request in requests]
        assert self._round_handler is not None
        try:
            results = self._round_handler(
                [c for c, requests in zip(owners, groups, strict=True) for _ in requests], flat
            )
        except Exception as exc:  # a bug: every request of the round answers it
            results = [exc] * len(flat)
        start = 0
        for connection, requests in zip(owners, groups, strict=True):
            end = start + len(requests)
            self._finish(connection, requests, results[start:end])
            start = end

    def _finish(
        self,
        connection: Connection,
        requests: list[RemotingCommand],
        results: list[HandlerResult | bytes | Exception] | None,
    ) -> None:
        try:
            reading = connection.finish_staged(requests, results)
        except Exception:
            self._failed(connection)
            reading = False
        if not reading:
            self.remove(connection)
