"""bench/optrace.py's counter: what docs/scaling.md's bytecode tables were counted with."""

from __future__ import annotations

import json
import sys

from bench.optrace import OpcodeCounter, report


def _three_calls() -> int:
    return sum(_one() for _ in range(3))


def _one() -> int:
    return 1


def _traced(counter: OpcodeCounter) -> None:
    previous = sys.gettrace()
    sys.settrace(counter.trace)
    try:
        _three_calls()
    finally:
        sys.settrace(previous)


def test_calls_and_opcodes_are_counted_per_function() -> None:
    counter = OpcodeCounter()
    _traced(counter)
    one = (__file__, "_one")
    assert counter.calls[one] == 3
    assert counter.ops[one] > 0
    assert counter.calls[(__file__, "_three_calls")] == 1


def test_clear_forgets_and_a_snapshot_taken_while_tracing_keeps_tracing(tmp_path) -> None:
    counter = OpcodeCounter()
    _traced(counter)
    counter.clear()
    assert not counter.ops and not counter.calls
    _traced(counter)
    one = (__file__, "_one")
    counted = counter.ops[one]
    previous = sys.gettrace()
    sys.settrace(counter.trace)  # as in the broker: the signal handler runs traced
    try:
        snap = counter.snapshot()
        still = sys.gettrace()
    finally:
        sys.settrace(previous)
    assert still == counter.trace
    assert {(f, n): v for f, n, v in snap["ops"]}[one] == counted
    path = tmp_path / "counts.json"
    path.write_text(json.dumps(snap))
    text = report(str(path), 3)
    assert text.startswith("bytecodes per request")
    assert "_one" in text
