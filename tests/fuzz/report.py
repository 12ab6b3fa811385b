"""What a campaign counts and finds (pure).

``Tally`` is the running count (frames by kind, connections, answers, pings, acknowledged
sends); ``Finding`` is one thing that must not happen (a crash, a hang, a traceback, a value
out of range accepted, a file touched outside the store, memory or descriptors kept, a lost
message), with the ids of the cases to replay; ``Report`` is both, plus the figures.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable

import attrs

RECENT_PER_PORT = 32  # case ids remembered per client port, to name a traceback's suspects
PORTS_REMEMBERED = 8192


@attrs.define
class Finding:
    what: str  # crash, hang, logged, accepted, answer, files, memory, descriptors, pulls, lost
    detail: str
    cases: list[str] = attrs.Factory(list)

    def __str__(self) -> str:
        suspects = f" (cases: {', '.join(self.cases[-8:])})" if self.cases else ""
        return f"[{self.what}] {self.detail}{suspects}"


@attrs.define
class Tally:
    started: float = attrs.Factory(time.monotonic)
    frames: collections.Counter[str] = attrs.Factory(collections.Counter)
    bytes_sent: int = 0
    connections: int = 0
    answers: int = 0
    refusals: int = 0  # answers with a non-zero code
    closed_by_server: int = 0
    pings: int = 0
    ping_max_s: float = 0.0
    structural: collections.Counter[str] = attrs.Factory(collections.Counter)
    good_sent: int = 0
    good_refused: collections.Counter[str] = attrs.Factory(collections.Counter)
    good_acked: dict[bytes, str] = attrs.Factory(dict)  # body -> topic
    fuzz_acked: dict[int, bytes] = attrs.Factory(dict)  # phys offset -> body
    findings: list[Finding] = attrs.Factory(list)
    _recent: collections.OrderedDict[int, collections.deque[str]] = attrs.Factory(
        collections.OrderedDict
    )

    @property
    def frames_total(self) -> int:
        return sum(self.frames.values())

    def sent(self, kind: str, size: int) -> None:
        self.frames[kind.split(":", 1)[0]] += 1
        self.bytes_sent += size

    def remember(self, port: int, case_id: str) -> None:
        """Case ``case_id`` went out from local port ``port``."""
        recent = self._recent.get(port)
        if recent is None:
            recent = self._recent[port] = collections.deque(maxlen=RECENT_PER_PORT)
            if len(self._recent) > PORTS_REMEMBERED:
                self._recent.popitem(last=False)
        else:
            self._recent.move_to_end(port)
        recent.append(case_id)

    def recent(self, port: int) -> list[str]:
        return list(self._recent.get(port, ()))

    def find(self, what: str, detail: str, cases: Iterable[str] = ()) -> None:
        self.findings.append(Finding(what, detail, list(cases)))

    def ping(self, seconds: float) -> None:
        self.pings += 1
        self.ping_max_s = max(self.ping_max_s, seconds)

    def rate_line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return (
            f"{elapsed:7.0f} s  frames={self.frames_total} ({self.frames_total / elapsed:.0f}/s)  "
            f"connections={self.connections}  answers={self.answers}  "
            f"good acked={len(self.good_acked)}  fuzz acked={len(self.fuzz_acked)}  "
            f"ping max={self.ping_max_s:.2f} s  findings={len(self.findings)}"
        )


@attrs.define
class Sample:
    """One process's resources at one moment."""

    rss: int
    rss_anon: int
    fds: int
    socket_fds: int

    def line(self) -> str:
        mib = 1024 * 1024
        return (
            f"RSS {self.rss / mib:.1f} MiB (anonymous {self.rss_anon / mib:.1f} MiB), "
            f"fds {self.fds} ({self.socket_fds} sockets)"
        )


@attrs.define
class Report:
    seed: int
    seconds: float
    tally: Tally
    before: dict[str, Sample] = attrs.Factory(dict)
    after: dict[str, Sample] = attrs.Factory(dict)
    files_touched: list[str] = attrs.Factory(list)
    good_recovered: int = 0
    fuzz_recovered: int = 0
    tracebacks: int = 0  # logged blocks holding a traceback
    errors_logged: int = 0  # lines at ERROR or CRITICAL (a traceback's own line included)

    @property
    def findings(self) -> list[Finding]:
        return self.tally.findings

    def count(self, what: str) -> int:
        return sum(finding.what == what for finding in self.findings)

    def lines(self) -> list[str]:
        t = self.tally
        out = [
            f"seed {self.seed}, {self.seconds:.0f} s of hostile traffic",
            f"frames sent: {t.frames_total} ({t.frames_total / max(self.seconds, 1e-9):.0f}/s), "
            f"{t.bytes_sent / 1024 / 1024:.1f} MiB, by kind: {dict(sorted(t.frames.items()))}",
            f"structural actions: {dict(sorted(t.structural.items()))}",
            f"connections opened: {t.connections} ({t.closed_by_server} closed by a server)",
            f"answers read: {t.answers} ({t.refusals} refusals); pings {t.pings}, slowest "
            f"{t.ping_max_s:.2f} s",
            f"crashes: {self.count('crash')}, hangs: {self.count('hang')}, tracebacks logged: "
            f"{self.tracebacks}, lines at ERROR/CRITICAL: {self.errors_logged}",
            f"files touched outside the stores: {len(self.files_touched)}"
            + (f" {self.files_touched[:10]}" if self.files_touched else ""),
        ]
        for name in sorted(self.before):
            after = self.after.get(name)
            out.append(f"{name} before: {self.before[name].line()}")
            out.append(f"{name} after:  {after.line() if after else '(not measured)'}")
        out.append(
            f"acknowledged good sends recovered after kill -9: {self.good_recovered} / "
            f"{len(t.good_acked)} (sent {t.good_sent}, refused {dict(t.good_refused)})"
        )
        out.append(
            f"acknowledged hostile sends recovered: {self.fuzz_recovered} / {len(t.fuzz_acked)}"
        )
        out.append(f"findings: {len(self.findings)}")
        out.extend(f"  {finding}" for finding in self.findings)
        return out
