"""What the reconciliation report concludes from the two logs' figures (pure: no Spark, no
files). ``reconcile`` measures each side with Spark; this module decides where the slave stops
agreeing with the master, what the bundle must hold, and what the operator is told.

Each side is trusted up to its first corrupt record, as the broker's recovery trusts it: past
that record nothing is read as the log (a slave's recovery would cut there; a bundle carrying a
master's corrupt bytes would be cut by the slave's next start). So every offset below comes from
the records before a side's first corrupt one, whatever the task split.

HA facts this relies on (RocketMQ 4.x HAConnection.WriteSocketService): a slave that reports a
non-zero offset is sent the master's bytes from exactly there, if the master still holds that
offset (getCommitLogData); if not, nothing is ever sent. A slave reporting 0 (an empty store) is
sent the master's log from the start of its newest segment only, not its history.
"""

from __future__ import annotations

import attrs

from ops.spark.segments import BackupError


@attrs.frozen
class LogSide:
    """One side's log as the job measured it."""

    start: int  # the first segment's start offset
    end: int  # end of its last message before ``first_corrupt`` (``start`` without messages)
    messages: int  # messages before ``first_corrupt``
    first_corrupt: int | None = None


@attrs.frozen
class Verdict:
    agree: int | None  # the slave equals the master's log below this; None: an empty slave
    divergence: int | None  # the first slave offset that is not the master's (or corrupt)
    repair: tuple[int, int] | None  # the master's bytes [from, to) the bundle holds; None: none
    ha_suffices: bool  # the slave is only behind: HA replication alone would catch it up
    findings: tuple[str, ...]


def first_divergence(mismatch: int | None, slave: LogSide | None) -> int | None:
    candidates = [o for o in (mismatch, slave and slave.first_corrupt) if o is not None]
    return min(candidates) if candidates else None


def decide(master: LogSide, slave: LogSide | None, mismatch: int | None) -> Verdict:
    """``mismatch``: the lowest offset of a slave message in [master.start, master.end) that
    the master has not at that offset with the same size and digest (None: all agree)."""
    if master.messages == 0:
        raise BackupError("the backup holds no message before its first corrupt record")
    findings = _master_findings(master)
    if slave is None:
        findings.append(
            "the slave store is empty: the bundle holds the whole backup (over HA an empty slave "
            "would get the master's log from the start of its newest segment only)"
        )
        return Verdict(None, None, (master.start, master.end), False, tuple(findings))
    divergence = first_divergence(mismatch, slave)
    agree = min(slave.end, master.end, *([divergence] if divergence is not None else []))
    if agree < master.start:
        raise BackupError(
            f"the slave's log agrees with the master only up to {agree}, but the backup starts at "
            f"{master.start}: an older backup is needed to bridge the gap"
        )
    if slave.first_corrupt is not None:
        findings.append(f"the slave has a corrupt record at {slave.first_corrupt}")
    if divergence is not None:
        findings.append(
            f"the slave diverges from the master at offset {divergence}: its log is cut there"
        )
    repair: tuple[int, int] | None = (agree, master.end)
    ha_suffices = False
    if divergence is None and slave.end > master.end:
        findings.append(
            f"the slave ({slave.end}) is ahead of the backup ({master.end}) and agrees with all "
            "of it: a newer backup is needed to check the rest; no bundle"
        )
        repair = None
    elif divergence is None and slave.end == master.end:
        findings.append("the slave holds the whole backup, byte for byte: nothing to repair")
    elif divergence is None:
        ha_suffices = slave.messages > 0
        findings.append(_behind(slave, master) if ha_suffices else _no_messages(slave))
    return Verdict(agree, divergence, repair, ha_suffices, tuple(findings))


def _master_findings(master: LogSide) -> list[str]:
    if master.first_corrupt is None:
        return []
    return [
        f"the backup has a corrupt record at {master.first_corrupt}: it is used up to "
        f"{master.end} only (a better copy is needed for what follows)"
    ]


def _behind(slave: LogSide, master: LogSide) -> str:
    return (
        f"HA catch-up suffices: the slave is only behind (same history up to {slave.end}, "
        f"{master.end - slave.end} bytes short of the backup's end); started, it replicates "
        f"from {slave.end} by itself as long as the master still holds that offset (this backup "
        f"starts at {master.start}). The bundle is for a master whose retention has passed it"
    )


def _no_messages(slave: LogSide) -> str:
    return f"the slave's log holds no message (its first segment starts at {slave.start})"


def lag_millis(master_ts: int | None, slave_ts: int | None) -> int | None:
    """A queue's time lag: its newest message on the master minus its newest agreeing one on
    the slave; never negative (store clocks can step back), None when the slave has none."""
    if master_ts is None or slave_ts is None:
        return None
    return max(0, master_ts - slave_ts)
