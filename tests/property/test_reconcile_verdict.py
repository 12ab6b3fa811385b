"""The report's conclusions over every combination of the two logs' figures: "agrees up to"
never past either side's end, the bundle inside the backup, HA catch-up claimed exactly when the
slave is only behind, lag never negative."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ops.spark.segments import BackupError
from ops.spark.verdict import LogSide, decide, lag_millis

OFFSETS = st.integers(0, 10_000)


@st.composite
def sides(draw):
    m_start = draw(OFFSETS)
    m_end = draw(st.integers(m_start + 1, m_start + 5_000))
    master = LogSide(m_start, m_end, draw(st.integers(1, 50)),
                     draw(st.none() | st.integers(m_end, m_end + 100)))  # fmt: skip
    if draw(st.booleans()):
        return master, None, None
    s_start = draw(OFFSETS)
    messages = draw(st.integers(0, 50))
    s_end = draw(st.integers(s_start + 1, s_start + 10_000)) if messages else s_start
    corrupt = draw(st.none() | st.integers(s_end, s_end + 100))
    mismatch = draw(st.none() | st.integers(max(m_start, s_start), max(m_start, s_start) + 5_000))
    if mismatch is not None and not (mismatch < min(s_end, m_end)):
        mismatch = None  # only slave messages inside both logs can mismatch
    return master, LogSide(s_start, s_end, messages, corrupt), mismatch


@given(sides())
def test_verdict_invariants(case) -> None:
    master, slave, mismatch = case
    try:
        verdict = decide(master, slave, mismatch)
    except BackupError as exc:
        assert slave is not None and "older backup" in str(exc)
        assert (
            min(slave.end, master.end, mismatch or slave.end, slave.first_corrupt or slave.end)
            < master.start
        )
        return
    if slave is None:
        assert verdict.agree is None and verdict.repair == (master.start, master.end)
        assert not verdict.ha_suffices
        return
    assert master.start <= verdict.agree <= min(master.end, slave.end)
    if verdict.divergence is not None:
        assert verdict.agree <= verdict.divergence
    if verdict.repair is not None:
        assert verdict.repair == (verdict.agree, master.end)
    else:
        assert verdict.divergence is None and slave.end > master.end
    behind = verdict.divergence is None and slave.end < master.end and slave.messages > 0
    assert verdict.ha_suffices == behind
    assert any("HA catch-up suffices" in f for f in verdict.findings) == behind


@given(st.none() | st.integers(0, 2**50), st.none() | st.integers(0, 2**50))
def test_lag_is_never_negative(master_ts, slave_ts) -> None:
    lag = lag_millis(master_ts, slave_ts)
    assert lag is None if None in (master_ts, slave_ts) else lag >= 0


def test_a_backup_older_than_the_slave_is_not_agreed_past_its_end() -> None:
    """The case the issue saw: the slave agrees with all of the backup and goes on."""
    verdict = decide(LogSide(0, 1_000, 10), LogSide(0, 468_706_432, 99), None)
    assert verdict.agree == 1_000 and verdict.repair is None
    assert any("newer backup is needed" in f for f in verdict.findings)
    with pytest.raises(BackupError, match="no message"):
        decide(LogSide(0, 0, 0), None, None)
