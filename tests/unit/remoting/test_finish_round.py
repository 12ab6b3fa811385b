"""The end of a round of reply frames in one C call (remoting/native/codec/finish.c
finish_plain_round) against its Python twin (remoting/round_finish.py
finish_plain_round_reference, what pure mode runs): over rounds of fake connections in any
state (closed, oneway, writes of another kind, sender or state, handles of any type, attributes
that raise or are missing, a full in-flight table, paused writes) and any sender answers (byte
counts around the high-water mark and past int64, errors, answers of the wrong count), the same
return, the same sender calls and the same attributes left on every object."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remoting import round_finish
from tests.kits.nativekit import needs_codec

pytestmark = needs_codec

HIGH = 1000


class Writes:
    def __init__(self, sender: Any, closed: Any, handle: Any, paused: Any) -> None:
        self._sender, self._closed, self._handle, self.paused = sender, closed, handle, paused
        self.queued = -7


class OtherWrites(Writes):
    pass


class InFlight:
    def __init__(self, full: Any) -> None:
        self.full = full


class Connection:
    def __init__(self, closed: Any, writes: Any, full: Any, raising: str | None) -> None:
        self.closed, self._writes, self._in_flight = closed, writes, InFlight(full)
        self._in_read_batch = True
        self._raising = raising

    def __getattribute__(self, name: str) -> Any:
        if name == object.__getattribute__(self, "_raising"):
            raise LookupError(name)
        return object.__getattribute__(self, name)


class Request:
    def __init__(self, flag: Any) -> None:
        self.flag = flag


class Sender:
    def __init__(self, answers: Any) -> None:
        self.answers, self.calls = answers, []

    def send_each(self, handles: list[Any], frames: list[Any]) -> Any:
        self.calls.append((list(handles), list(frames)))
        if isinstance(self.answers, Exception):
            raise self.answers
        self.given = list(self.answers)
        return self.given


ANSWERS = st.one_of(
    st.integers(-(2**64), 2**64),
    st.sampled_from([HIGH, HIGH + 1, 0]),
    st.builds(OSError, st.just("gone")),
    st.builds(RuntimeError, st.just("stopped")),
    st.just("odd"),
)
CONNECTION = st.fixed_dictionaries(
    {
        "closed": st.sampled_from([False, False, False, True, 0]),
        "flag": st.sampled_from([0, 0, 0, 2, 3, -1, 2**70, True, "0"]),
        "kind": st.sampled_from(["thread", "thread", "thread", "other", "none"]),
        "wclosed": st.sampled_from([False, False, True]),
        "own_sender": st.sampled_from([True, True, True, False]),
        "handle": st.sampled_from([3, 3, -1, 2**70, "3", None]),
        "frame": st.sampled_from([b"reply", b"reply", bytearray(b"r"), None]),
        "full": st.sampled_from([False, False, True, 1]),
        "paused": st.sampled_from([False, False, True, 0]),
        "raising": st.sampled_from([None, None, None, "closed", "_writes", "_in_flight"]),
    }
)


def _round(specs: list[dict[str, Any]], answers: Any) -> tuple[list[Any], ...]:
    sender = Sender(answers)
    owners, staged, frames = [], [], []
    for spec in specs:
        kind = {"thread": Writes, "other": OtherWrites, "none": None}[spec["kind"]]
        writes = None
        if kind is not None:
            owner = sender if spec["own_sender"] else Sender([])
            writes = kind(owner, spec["wclosed"], spec["handle"], spec["paused"])
        owners.append(Connection(spec["closed"], writes, spec["full"], spec["raising"]))
        staged.append(Request(spec["flag"]))
        frames.append(spec["frame"])
    return owners, staged, frames, [sender]


def _state(owners: list[Connection], sender: Sender) -> list[Any]:
    seen: list[Any] = [sender.calls]
    for c in owners:
        d = object.__getattribute__(c, "__dict__")
        w = d["_writes"]
        seen.append((d["_in_read_batch"], None if w is None else w.queued))
    return seen


def _run(function: Any, specs: list[dict[str, Any]], answers: Any) -> tuple[Any, list[Any]]:
    owners, staged, frames, (sender,) = _round(specs, answers)
    try:
        got: Any = function(owners, staged, frames, Writes, sender, HIGH)
    except Exception as exc:  # compared by type and text
        got = (type(exc), str(exc))
    else:
        if got is not None:
            got = [(i, a if not isinstance(a, Exception) else (type(a), str(a))) for i, a in got]
    return got, _state(owners, sender)


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(CONNECTION, max_size=5),
    answers=st.one_of(st.lists(ANSWERS, min_size=0, max_size=6), st.just(KeyError("bug"))),
)
def test_the_c_and_its_twin_finish_a_round_alike(specs: list[dict[str, Any]], answers: Any) -> None:
    from remoting.codec_native import native

    assert native is not None
    c = _run(native.finish_plain_round, specs, answers)
    twin = _run(round_finish.finish_plain_round_reference, specs, answers)
    assert c == twin


def test_a_common_round_is_handed_over_and_settled_in_one_call() -> None:
    from remoting.codec_native import native

    spec = dict(closed=False, flag=0, kind="thread", wclosed=False, own_sender=True, handle=3,
                frame=b"reply", full=False, paused=False, raising=None)  # fmt: skip
    paused = dict(spec, paused=True)
    for function in (native.finish_plain_round, round_finish.finish_plain_round_reference):
        got, state = _run(function, [spec, paused, spec], [10, 20, HIGH + 1])
        # the paused one to look at, the one over the mark for _sent; the first settled
        assert got == [(1, None), (2, HIGH + 1)]
        assert state == [[([3, 3, 3], [b"reply"] * 3)], (False, 10), (False, 20), (True, -7)]


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("owners", [], [], Writes, None, HIGH),
        ([], (), [], Writes, None, HIGH),
        ([], [], [], "Writes", None, HIGH),
        ([], [], [], Writes, None, 1.5),
        ([], [], [], Writes, None, 2**80),
    ],
)
def test_hostile_arguments_are_refused_alike(args: tuple[Any, ...]) -> None:
    from remoting.codec_native import native

    outcomes = []
    for function in (native.finish_plain_round, round_finish.finish_plain_round_reference):
        try:
            function(*args)
        except (TypeError, OverflowError) as exc:
            outcomes.append(type(exc))
        else:
            outcomes.append(None)
    assert outcomes[0] is not None and outcomes[0] == outcomes[1]


class Shrinking(Writes):
    """Writes whose ``queued`` setter empties the answer list send_each handed out."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "queued" and hasattr(self._sender, "given"):
            self._sender.given.clear()
        object.__setattr__(self, name, value)


def test_an_answer_list_changed_while_settling_is_walked_as_it_was() -> None:
    from remoting.codec_native import native

    for function in (native.finish_plain_round, round_finish.finish_plain_round_reference):
        sender = Sender([1, 2, 3])
        owners = [Connection(False, Shrinking(sender, False, 3, False), False, None)
                  for _ in range(3)]  # fmt: skip
        got = function(owners, [Request(0)] * 3, [b"r"] * 3, Shrinking, sender, HIGH)
        assert got == []
        assert [object.__getattribute__(c, "_writes").queued for c in owners] == [1, 2, 3]
