"""The idle sleep's one call (remoting/native/codec/idle.c idle_wait) held to its twin
(remoting/idle_sleep.py idle_wait_reference): the same answer, the same flushes and the same
deadline heap afterwards, for Trio states that decline and ones that sleep, with sockets and
Trio's epoll ready or not. Trio's state comes as plain objects, as slotted ones shaped like
Trio's attrs classes (which the C reads at their slots' offsets), and with a scope whose
registered deadline is a property giving a Fraction (read and compared the generic way)."""

from __future__ import annotations

import heapq
import math
import select
import socket
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from remoting.codec_native import native
from remoting.idle_sleep import MAX_SLEEP_S, MAX_TASKS, idle_wait_reference
from tests.kits.nativekit import needs_codec

pytestmark = pytest.mark.skipif(not hasattr(select, "epoll"), reason="needs select.epoll")

NOW = 5000.0


class Scope:
    def __init__(self, registered: float) -> None:
        self._registered_deadline = registered


def _next_deadline(deadlines: Any) -> float:
    deadlines.asked += 1
    heap = deadlines._heap
    while heap:
        deadline, _, scope = heap[0]
        if deadline == scope._registered_deadline:
            return deadline
        heapq.heappop(heap)
    return math.inf


class Deadlines:
    """Trio's Deadlines' heap and next_deadline (trio/_core/_run.py), counted."""

    def __init__(self, entries: list[tuple[float, int, Scope]]) -> None:
        self._heap = list(entries)
        heapq.heapify(self._heap)
        self.asked = 0

    next_deadline = _next_deadline


@attrs.define(eq=False)
class SlottedScope:
    """As Trio's CancelScope: the registered deadline in a __slots__ member."""

    _registered_deadline: float


class FractionScope:
    """A registered deadline that is a property (no slot to read) and not a float (compared
    as Python's != compares a Fraction with a float)."""

    __slots__ = ("_at",)

    def __init__(self, registered: float) -> None:
        self._at = registered

    @property
    def _registered_deadline(self) -> Fraction:
        return Fraction(self._at)


@attrs.define(eq=False)
class SlottedDeadlines:
    """As Trio's Deadlines, slotted."""

    _heap: list[tuple[float, int, Any]]
    asked: int = 0

    next_deadline = _next_deadline


class Clock:
    def deadline_to_sleep_time(self, deadline: float) -> float:
        return deadline - NOW


class Task:
    def __init__(self, next_send: bool) -> None:
        self._next_send_fn = (lambda: None) if next_send else None


@attrs.define(eq=False)
class SlottedTask:
    _next_send_fn: Callable[[], None] | None


class Runner:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.runq = [object()] if spec["runq"] else []
        self.waiting_for_idle = {1: object()} if spec["waiting"] else {}
        self.clock_autojump_threshold = spec["autojump"]
        self.tasks = {Task(s) for s in spec["tasks"]}
        self.clock = Clock()


@attrs.define(eq=False)
class SlottedRunner:
    """As Trio's Runner: slotted, its run queue a deque, its idle waiters a SortedDict."""

    runq: deque[object]
    waiting_for_idle: SortedDict
    clock_autojump_threshold: float
    tasks: set[SlottedTask]
    clock: Clock

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> SlottedRunner:
        return cls(
            deque([object()] if spec["runq"] else []),
            SortedDict({1: object()} if spec["waiting"] else {}),
            spec["autojump"],
            {SlottedTask((lambda: None) if s else None) for s in spec["tasks"]},
            Clock(),
        )


# Each kind of Trio state: its runner, deadlines and scope classes.
KINDS: dict[str, tuple[Any, Any, Any]] = {
    "plain": (Runner, Deadlines, Scope),
    "slotted": (SlottedRunner.from_spec, SlottedDeadlines, SlottedScope),
    "property": (SlottedRunner.from_spec, SlottedDeadlines, FractionScope),
}


class Flush:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


@contextmanager
def sockets(ready: list[bool], trio_ready: bool) -> Iterator[tuple[select.epoll, int, list[int]]]:
    """A sleep's epoll holding len(ready) sockets (those marked with a byte to read) and a
    stand-in for Trio's epoll (readable when ``trio_ready``)."""
    pairs = [socket.socketpair() for _ in range(len(ready) + 1)]
    epoll = select.epoll()
    try:
        for (ours, theirs), is_ready in zip(pairs, [*ready, trio_ready], strict=True):
            epoll.register(ours.fileno(), select.EPOLLIN)
            if is_ready:
                theirs.send(b"x")
        yield epoll, pairs[-1][0].fileno(), [ours.fileno() for ours, _ in pairs[:-1]]
    finally:
        epoll.close()
        for ours, theirs in pairs:
            ours.close()
            theirs.close()


# Mostly states in which it sleeps: each way to decline is one draw in several.
rarely = st.sampled_from([False, False, False, False, False, True])
entry = st.tuples(
    st.sampled_from([-1.0, 0.0] + [0.0005, 0.001, 0.002, 100.0, 1e6] * 4),
    rarely,  # stale: its scope's registered deadline moved since
)
specs = st.fixed_dictionaries(
    {
        "runq": rarely,
        "waiting": rarely,
        "autojump": st.sampled_from([math.inf] * 8 + [0.0, 1.5, -math.inf]),
        "resumed": st.booleans(),
        "tasks": st.sampled_from(
            [[], [False], [False, True], [False] * 5, [False] * (MAX_TASKS + 1)]
        ),
        "entries": st.lists(entry, max_size=4),
        "offset": st.sampled_from([None, 1234.5, 0.0]),
        "ready": st.lists(st.booleans(), max_size=4),
        "trio_ready": st.booleans(),
        "flush": st.booleans(),
        "kind": st.sampled_from(sorted(KINDS)),
    }
)


def run_one(
    wait: Callable[..., Any], spec: dict[str, Any], epoll: select.epoll, trio_fd: int
) -> tuple[Any, ...]:
    make_runner, make_deadlines, make_scope = KINDS[spec.get("kind", "plain")]
    entries = [
        (NOW + delta, i, make_scope(NOW + delta + (7.0 if stale else 0.0)))
        for i, (delta, stale) in enumerate(spec["entries"])
    ]
    if not any(spec["ready"]) and not spec["trio_ready"]:
        # Nothing will wake it: a current deadline 1 ms away bounds the sleep.
        entries.append((NOW + 0.001, 99, make_scope(NOW + 0.001)))
    heapq.heapify(entries)
    deadlines = make_deadlines(entries)
    runner = make_runner(spec)
    offset = spec["offset"]
    # SystemClock's time is offset + perf_counter: both ways come to deadline - NOW.
    clock = (lambda: NOW - offset) if offset is not None else (lambda: pytest.fail("no clock"))
    state = (runner, deadlines, offset, epoll, epoll.fileno(), trio_fd, clock)
    flush = Flush() if spec["flush"] else None
    got = wait(state, flush, spec["resumed"])
    events = None if got is None else sorted(got)
    heap = [(d, i) for d, i, _ in deadlines._heap]
    return events, None if flush is None else flush.calls, heap, deadlines.asked


@needs_codec
@settings(max_examples=300, deadline=None)
@given(specs)
def test_idle_wait_matches_its_twin(spec: dict[str, Any]) -> None:
    assert native is not None
    with sockets(spec["ready"], spec["trio_ready"]) as (epoll, trio_fd, fds):
        ours = run_one(native.idle_wait, spec, epoll, trio_fd)
        twin = run_one(idle_wait_reference, spec, epoll, trio_fd)
    assert ours == twin
    events = ours[0]
    if events is not None:  # only ready sockets, never Trio's epoll
        assert {fd for fd, _ in events} == {
            fd for fd, r in zip(fds, spec["ready"], strict=True) if r
        }


@needs_codec
def test_idle_wait_sleeps_until_the_deadline_and_bounds_it() -> None:
    assert native is not None
    spec = {
        "runq": False, "waiting": False, "autojump": math.inf, "resumed": True, "tasks": [],
        "entries": [(0.003, False)], "offset": 100.0, "ready": [], "trio_ready": False,
        "flush": True,
    }  # fmt: skip
    with sockets([], False) as (epoll, trio_fd, _):
        for wait in (native.idle_wait, idle_wait_reference):
            assert run_one(wait, spec, epoll, trio_fd)[:2] == (None, 1)
    assert MAX_SLEEP_S == native.IDLE_MAX_SLEEP_S


@needs_codec
@pytest.mark.parametrize(
    "args",
    [
        (),
        ((),),
        ("state", None, False),
        ((1, 2, 3), None, False),
        ((None, None, "offset", None, 3, 4, None), None, False),
        ((None, None, None, None, "3", 4, None), None, False),
        ((None, None, None, None, 3, 4.0, None), None, False),
        ((None, None, None, None, -1, 4, None), None, False),
        ((None, None, None, None, 3, 2**40, None), None, False),
        ((None, None, None, None, 3, 2**80, None), None, False),
    ],
)
def test_idle_wait_refuses_bad_arguments_before_anything(args: tuple[Any, ...]) -> None:
    assert native is not None
    with pytest.raises((TypeError, ValueError)):
        native.idle_wait(*args)


@needs_codec
def test_idle_wait_passes_on_trios_own_errors() -> None:
    """A runner without the attributes it reads, a heap that is not a list, a flush that
    raises: raised, as the twin raises them (the selector's task fails: a bug)."""
    assert native is not None
    spec = {
        "runq": False, "waiting": False, "autojump": math.inf, "resumed": False, "tasks": [],
        "entries": [(0.001, False)], "offset": None, "ready": [True], "trio_ready": False,
        "flush": False,
    }  # fmt: skip
    with sockets([True], False) as (epoll, trio_fd, _):
        for wait in (native.idle_wait, idle_wait_reference):
            runner = Runner(spec)
            del runner.runq
            deadlines = Deadlines([])
            with pytest.raises(AttributeError):
                wait((runner, deadlines, None, epoll, epoll.fileno(), trio_fd, None), None, False)

            def boom() -> None:
                raise RuntimeError("flush failed")

            with pytest.raises(RuntimeError):
                wait((Runner(spec), deadlines, None, epoll, epoll.fileno(), trio_fd, None), boom, 0)


@needs_codec
@pytest.mark.parametrize("counted", [False, True])
def test_idle_wait_reads_perf_counters_clock_as_calling_it(counted: bool) -> None:
    """time.perf_counter as the state's clock (Trio's SystemClock's; the C reads
    CLOCK_MONOTONIC itself): a deadline just passed declines and one 30 s ahead sleeps (a
    ready socket answers it), as when the clock is called. Any other clock is called, once a
    sleep (a wrapper of perf_counter here)."""
    assert native is not None
    calls = []

    def wrapper() -> float:
        calls.append(1)
        return time.perf_counter()

    clock = wrapper if counted else time.perf_counter
    offset = 1234.5
    with sockets([True], False) as (epoll, trio_fd, fds):
        for wait in (native.idle_wait, idle_wait_reference):
            for ahead, answer in ((-1e-9, None), (30.0, [(fds[0], select.EPOLLIN)])):
                at = time.perf_counter() + offset + ahead
                deadlines = Deadlines([(at, 0, Scope(at))])
                runner = Runner(
                    {"runq": False, "waiting": False, "autojump": math.inf, "tasks": []}
                )
                state = (runner, deadlines, offset, epoll, epoll.fileno(), trio_fd, clock)
                assert wait(state, None, False) == answer
    assert len(calls) == (4 if counted else 0)
