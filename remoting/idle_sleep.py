"""IdleSleep: the selector's wait between its passes (a lock-step client's requests, or the
rounds of many connections' sync sends) outside Trio's wait cycle when Trio has nothing else to
do.

A task that waits with ``trio.lowlevel.wait_readable`` pays Trio's whole cycle per wake-up: the
re-arm (an ``epoll_ctl``), the run loop's deadlines and instrument checks, its own
``epoll_wait``, ``process_events``, the reschedule and the task's switch back: 8-13 µs of CPU a
wake in bench/bench_wake.py, against ~5 for a plain epoll loop's whole request, and a fifth of a
pull of 32 under the peers' lock-step consumer (docs/scaling.md, "A lone request's wake-up,
second look"). When no task is runnable and no one waits for the loop to go idle, Trio would
only sleep in its epoll until its next deadline; so the selector sleeps instead, in an epoll of
its own holding its connections' sockets and Trio's epoll, until the same deadline. The sockets
that woke it are read at once, as the first round of the selector's pass (no look in the
selector's epoll to name them); anything for Trio (another task's descriptor, a
thread's ``run_sync_soon``, a signal: all wake Trio's epoll) or the deadline sends the selector
back through Trio's wait, which then runs as it always did.

Trio gives no public way to see which tasks are still to run (its run queue holds only the next
batch's; the rest of the current batch is a local of its run loop), its next deadline or its
epoll (``current_statistics`` costs ~5 µs, as much as it would save, and misses the batch), so
this reads them from Trio's runner (trio is pinned in pyproject.toml), checked when the
selector starts: with any of them missing (another Trio, guest mode,
another I/O backend) ``for_current_run`` returns None and the selector waits through Trio
always. Instruments' ``before_io_wait`` hooks do not see these sleeps; the server's only one is
the sender's kick, which the selector calls itself before sleeping.
"""

from __future__ import annotations

import math
import select
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

# Trio's own bound on one I/O wait (its _MAX_TIMEOUT): epoll takes no infinity.
MAX_SLEEP_S = 86400.0
# Whether any task is still to run in Trio's current batch is a walk over the run's tasks (a
# broker has ~50, and two more per connection), once each time the selector comes back from
# Trio (a lock-step client's requests then sleep here in runs: the probe every 16 lone passes
# and Trio's own wake-ups end them). Past this many (~100 connections) the walk would cost
# about what the sleeps save, and the selector waits through Trio.
MAX_TASKS = 256
# Events one sleep reports: the selector's own look takes as many.
MAX_EVENTS = 64
_INF = math.inf


class IdleSleep:
    def __init__(self, runner: Any, trio_epoll_fd: int, clock_offset: float | None) -> None:
        """``clock_offset``: Trio's SystemClock's (its time is perf_counter plus it), for the
        sleep's timeout without the clock's two calls; None asks the clock."""
        # Trio's epoll and every socket the selector reads (``add``/``remove``, as the
        # selector's own epoll): a sleep's events are the ready sockets themselves.
        self._epoll = select.epoll()
        self._epoll.register(trio_epoll_fd, select.EPOLLIN)
        from remoting.codec_native import native  # its module imports this one's bounds

        state = (
            runner,
            runner.deadlines,
            clock_offset,
            self._epoll,
            self._epoll.fileno(),
            trio_epoll_fd,
            perf_counter,
        )
        wait = idle_wait_reference if native is None else native.idle_wait
        # idle_wait's first argument (the selector's lone loop, remoting/lone_loop.py, sleeps
        # with it too).
        self.state = state
        # sleep(flush, resumed_by_trio): idle_wait's, bound to this run's state (a C call when
        # the codec is built: no Python frame per sleep).
        self.sleep: Callable[[Callable[[], None] | None, bool], list[tuple[int, int]] | None] = (
            partial(wait, state)
        )

    @classmethod
    def for_current_run(cls) -> IdleSleep | None:
        """For the running Trio run; None when Trio's runner is not what this knows (the
        selector then waits through Trio)."""
        try:
            from trio._core._run import GLOBAL_RUN_CONTEXT, SystemClock

            runner = GLOBAL_RUN_CONTEXT.runner
            trio_epoll = runner.io_manager._epoll
            known = (
                isinstance(trio_epoll, select.epoll)
                and not runner.is_guest
                and hasattr(runner, "tasks")
                and all(hasattr(task, "_next_send_fn") for task in runner.tasks)
                and callable(runner.deadlines.next_deadline)
                and type(getattr(runner.deadlines, "_heap", None)) is list
                and callable(runner.clock.deadline_to_sleep_time)
                and hasattr(runner, "waiting_for_idle")
                and hasattr(runner, "clock_autojump_threshold")
            )
            clock = runner.clock
            offset = getattr(clock, "offset", None)
            if type(clock) is not SystemClock or type(offset) is not float:
                offset = None
        except (ImportError, AttributeError):
            return None
        return cls(runner, trio_epoll.fileno(), offset) if known else None

    def add(self, fd: int) -> None:
        self._epoll.register(fd, select.EPOLLIN)

    def remove(self, fd: int) -> None:
        """Before the socket closes, as for the selector's epoll."""
        try:
            self._epoll.unregister(fd)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self._epoll.close()


def idle_wait_reference(
    state: tuple[Any, Any, float | None, select.epoll, int, int, Callable[[], float]],
    flush: Callable[[], None] | None,
    resumed_by_trio: bool,
) -> list[tuple[int, int]] | None:
    """Sleep until a socket or Trio's epoll is ready, or Trio's next deadline (the native
    ``idle_wait``'s twin, remoting/native/codec/idle.c). The ready sockets' events: read them
    without Trio's wait. None when the caller must wait through Trio: a task is runnable,
    someone waits for the loop to go idle, a test clock jumps, a deadline is due, or Trio's
    epoll woke. ``state``: (Trio's runner, its deadlines, its SystemClock's offset or None to
    ask the clock, the sleep's epoll and its descriptor (the C's), Trio's epoll descriptor,
    perf_counter).
    ``resumed_by_trio``: the caller has been through Trio's scheduler since its last sleep
    here that answered events (its batch may hold other tasks still to run)."""
    runner, deadlines, offset, epoll, _, trio_fd, clock = state
    if runner.runq or runner.waiting_for_idle or runner.clock_autojump_threshold != _INF:
        return None
    if resumed_by_trio:
        # Tasks still to run in the batch the caller was resumed in (Trio keeps the batch to
        # itself): a task's next send is set from its reschedule until it runs. Once none
        # is, none can be until the caller yields again: what it wakes goes to runq.
        tasks = runner.tasks
        if len(tasks) > MAX_TASKS:
            return None
        for task in tasks:
            if task._next_send_fn is not None:
                return None
    # Trio's next deadline as next_deadline finds it (the heap's first entry while it is
    # current; a stale one goes to next_deadline, which drops it), then the sleep time.
    heap = deadlines._heap
    if heap:
        deadline, _, scope = heap[0]
        if deadline != scope._registered_deadline:
            deadline = deadlines.next_deadline()
        if offset is None:
            timeout = runner.clock.deadline_to_sleep_time(deadline)
        else:
            timeout = deadline - offset - clock()
        if timeout <= 0:
            return None
        if timeout > MAX_SLEEP_S:
            timeout = MAX_SLEEP_S
    else:
        timeout = MAX_SLEEP_S
    if flush is not None:
        flush()  # what Trio's before_io_wait would have done: the queued replies leave
    events = epoll.poll(timeout, MAX_EVENTS)
    for fd, _ in events:
        if fd == trio_fd:
            return None  # the sockets stay ready for the selector's look after Trio's
    return events or None  # none: Trio's deadline
