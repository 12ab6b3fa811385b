"""The job's own stderr lines: phase numbering, elapsed time from an injected clock, and the
progress figure."""

from __future__ import annotations

from ops.spark.progress import Phase, progress_text


def test_phases_are_numbered_with_seconds_since_the_start() -> None:
    now = [100.0]
    lines: list[str] = []
    phase = Phase(lines.append, t0=90.0, clock=lambda: now[0])
    phase("starting Spark")
    now[0] = 125.25
    phase.note("parsing the backup: 1/4 ranges")
    phase("parsed")
    assert lines == [
        "[1]   10.0 s  starting Spark",
        "      35.2 s  parsing the backup: 1/4 ranges",
        "[2]   35.2 s  parsed",
    ]


def test_progress_is_the_finished_share_of_the_bytes() -> None:
    assert progress_text("parsing the backup", 3, 12, 3 << 30) == (
        "parsing the backup: 3/12 ranges, ~768.0 of 3,072.0 MiB (25%)"
    )
    assert progress_text("x", 0, 0, 10) == "x: 0/0 ranges, ~0.0 of 0.0 MiB (0%)"
