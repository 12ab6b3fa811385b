"""A lock-step client's lone requests between the selector's idle sleeps (remoting/selector.py):
LoneLooks, the selector's count of whether looks after a lone read find work, and
``serve_lone_reference``, the twin of the native ``serve_lone`` (remoting/native/codec/
lone_loop.c), which serves such requests sleep after sleep without going back to the
selector's loop between them.

Under sync sends on 8 connections almost every request took one iteration of the selector's
loop of its own: the idle sleep naming one socket, the LoneLooks calls, ``_read_lone``'s
lookups and ``answer_lone``, the type check (~40 bytecodes around two C calls). The loop here
runs while that case holds and hands anything else back at the step where it stopped, so the
selector carries on exactly as its own loop would have. Both sides keep LoneLooks' two numbers
in one object (the C type in native mode, the class below in pure mode).

remoting/codec_native.py imports this module for the C's bounds, held equal to the ones here:
so the twin imports remoting/receive.py (which imports the codec) when it runs.
"""

from __future__ import annotations

from typing import Any

from remoting import idle_sleep

# LoneLooks' probe period and share (in 1/LOOKS_ONE; each new look weighs 1/2**SHIFT).
PROBE_EVERY = 16
LOOKS_ONE, LOOKS_ENOUGH, LOOKS_WEIGHT_SHIFT = 1024, 32, 3


class LoneLooksReference:
    """Whether the selector looks again, after a plain checkpoint, when a pass served one read
    and then found nothing (one client, one request at a time). A look that finds the next
    request saves a sleep and a wake-up; one that finds nothing costs a Trio pass and an
    epoll_wait. A load generator on the same host answering at once had its next request in
    for ~40% of such looks, in bursts, and looking every time was the cheaper for it; a Python
    client that works between requests for ~0.4% (5 in 1,206), and a client across a network
    for none. So the selector keeps a running share of looks that found work (each new one
    weighs 1/8) and looks while it is at least 1/32 (about 26 misses in a row end the looks;
    stopping at 1/8 or 1/4 stopped them for the fast client too, its misses come in runs);
    below that it tries one look every PROBE_EVERY lone passes, so that a client turning fast
    is noticed. The native LoneLooks (lone_loop.c) is its twin."""

    PROBE_EVERY = PROBE_EVERY

    def __init__(self) -> None:
        self.share = LOOKS_ONE
        self.since_probe = 0

    def paying(self) -> bool:
        """Whether such looks have lately been finding work (no probe counted)."""
        return self.share >= LOOKS_ENOUGH

    def look_again(self) -> bool:
        if self.share >= LOOKS_ENOUGH:
            return True
        self.since_probe += 1
        if self.since_probe < PROBE_EVERY:
            return False
        self.since_probe = 0
        return True

    def looked(self, found: bool) -> None:
        """What the look after a lone pass found."""
        self.share += ((LOOKS_ONE if found else 0) - self.share) >> LOOKS_WEIGHT_SHIFT


def serve_lone_reference(
    looks: Any,
    idle_state: tuple[Any, ...],
    connections: dict[int, Any],
    plain: dict[int, Any],
    kinds: tuple[Any, ...],
    flush: Any,
    resumed: bool,
    lone_look: bool,
    round_handler: Any,
) -> Any:
    """The selector's idle sleeps (``idle_wait`` on ``idle_state`` with ``flush``, ``resumed``
    for the first) and, while each names exactly one socket that is a plain connection of the
    selector's (``connections[fd]`` is ``plain[fd]``'s, a round entry) and ``answer_lone``
    (with ``kinds``) answers True, or several sockets whose round ``serve_round_reference``
    serves whole with ``round_handler`` (when it is not None), the next sleep.
    ``lone_look``: whether the selector's next look would follow a lone read; a sleep that
    answers counts as such a look that found nothing (``looks.looked(False)``), and after each
    request served it is ``looks.look_again()``, after each round False. What stopped it comes
    back for the selector to finish: None, the first sleep declined (nothing done); a bool,
    lone requests were served last and then a sleep declined (the selector's look and lone
    look are that value); Ellipsis, a round was served last and then a sleep declined (the
    selector looks, as after a pass of several reads); the sleep's events when several
    sockets woke it and there is no round handler; (fd,) when the one socket is not such a
    connection (the selector reads it as before); (connection, answer) when ``answer_lone``
    gave anything but True; (connection, None, exc) when it raised an Exception; a round's
    hand-back (``serve_round_reference`` says what). Anything else raised is raised.
    TypeError, before any sleep, when ``kinds`` is not a 4-tuple."""
    from remoting.receive import answer_lone_reference

    if type(kinds) is not tuple or len(kinds) != 4:
        raise TypeError("serve_lone: kinds is (frame, reply, writes, high_water)")
    served: Any = None  # what was served last: None, "lone" or "round"
    while True:
        ready = idle_sleep.idle_wait_reference(idle_state, flush, resumed)  # type: ignore[arg-type]
        if ready is None:
            if served is None:
                return None
            return ... if served == "round" else bool(lone_look)
        if lone_look:
            looks.looked(False)
        resumed = False
        if len(ready) != 1:
            if round_handler is None:
                return ready
            handed = serve_round_reference(ready, connections, plain, kinds, round_handler)
            if handed is not True:
                return handed
            served, lone_look = "round", False
            continue
        fd = ready[0][0]
        connection = connections.get(fd)
        entry = None if connection is None else plain.get(fd)
        if type(entry) is not tuple or len(entry) != 3 or entry[0] is not connection:
            return (fd,)
        try:
            answer = answer_lone_reference(entry, fd, kinds)
        except Exception as exc:
            return (connection, None, exc)
        if answer is not True:
            return (connection, answer)
        lone_look = looks.look_again()
        served = "lone"


_NOT_SENDERS = object()  # the first owner's writes are not the sender's


def serve_round_reference(
    ready: list[tuple[int, int]],
    connections: dict[int, Any],
    plain: dict[int, Any],
    kinds: tuple[Any, ...],
    round_handler: Any,
) -> Any:
    """A sleep's several ready sockets served as the selector's ``_read_round`` serves them
    (remoting/native/codec/round_loop.c serve_round, its twin, says why): ``recv_round``, the
    round handler, ``finish_round``'s common case (``finish_plain_round``). True when the
    round was served whole (nothing staged, or every owner's request answered by the sender
    with nothing handed back); else (step, owners, staged, what) for the selector to finish:
    step 0 after ``recv_round`` with its rest (a read that brought anything else, a socket
    it did not read, or a lone owner after all), step 1 with the handler's results (for
    ``finish_round``), step 2 with the tail ``finish_plain_round`` handed back. A round
    handler's Exception answers every request of the round, as the selector's does.

    The reads are the module's ``recv_round``, as ``answer_lone_reference`` reads with the
    module's ``recv_command``: the C's where there is one (it scans a whole read's header to
    its command), so that the twins are held to the same steps; in pure mode its twin leaves
    every whole frame to the connection's own path, so every round is handed back after its
    reads and the selector's Python serves it as before."""
    from remoting.receive import recv_round
    from remoting.round_finish import finish_plain_round_reference

    owners, staged, rest = recv_round(ready, connections, plain, kinds[0])
    if rest or len(owners) == 1:
        return (0, owners, staged, rest)
    if not owners:
        return True
    try:
        results = round_handler(owners, staged)
    except Exception as exc:
        results = [exc] * len(staged)
    try:  # an attribute that cannot be read is left to finish_round, which meets it again
        w = owners[0]._writes
        sender = w._sender if type(w) is kinds[2] else _NOT_SENDERS
    except Exception:
        sender = _NOT_SENDERS
    if sender is _NOT_SENDERS:
        return (1, owners, staged, results)
    tail = finish_plain_round_reference(owners, staged, results, kinds[2], sender, kinds[3])
    if tail is None:
        return (1, owners, staged, results)
    return True if type(tail) is list and not tail else (2, owners, staged, tail)
