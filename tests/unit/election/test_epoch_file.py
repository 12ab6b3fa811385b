"""The epoch file and the consistent point between a returning member's log and the master's."""

from __future__ import annotations

import pytest

from broker.election import epoch_file as F
from etcdstate.epochs import EpochEntry as E
from etcdstate.epochs import EpochFileError, append


def test_round_trip_and_atomic_save(tmp_path):
    entries = [E(1, 0), E(3, 500), E(4, 500)]
    F.save(tmp_path, entries)
    assert F.load(tmp_path) == entries
    assert (tmp_path / F.FILE_NAME).read_text() == "1 0\n3 500\n4 500\n"
    assert F.load(tmp_path / "nothing-here") == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("1 0\n1 5\n", "does not follow"),
        ("2 50\n3 10\n", "does not follow"),
        ("0 0\n", "out of range"),
        ("1\n", "expected 'epoch startOffset'"),
        ("1 -5\n", "expected 'epoch startOffset'"),
        ("1 99999999999999999999\n", "expected 'epoch startOffset'"),
    ],
)
def test_a_file_not_written_by_a_broker_is_refused(tmp_path, text, message):
    (tmp_path / F.FILE_NAME).write_text(text)
    with pytest.raises(EpochFileError, match=message):
        F.load(tmp_path)


def test_append_replaces_terms_a_cut_log_no_longer_holds():
    assert append([E(1, 0), E(2, 100)], E(3, 150)) == [E(1, 0), E(2, 100), E(3, 150)]
    assert append([E(1, 0), E(2, 100)], E(2, 100)) == [E(1, 0), E(2, 100)]
    assert append([E(1, 0), E(2, 100)], E(3, 50)) == [E(1, 0), E(3, 50)]


def test_an_old_master_keeps_what_the_next_term_started_from():
    # I wrote epoch 2 up to 900; the new master started epoch 3 at 700 (it had up to 700)
    assert F.consistent_end([E(1, 0), E(2, 300)], 900, [E(1, 0), E(2, 300), E(3, 700)]) == 700


def test_a_slave_of_the_current_term_keeps_all():
    assert F.consistent_end([E(1, 0), E(3, 700)], 950, [E(1, 0), E(3, 700)]) == 950


def test_a_slave_behind_keeps_all():
    assert F.consistent_end([E(1, 0)], 400, [E(1, 0), E(2, 600)]) == 400


def test_a_term_started_at_another_offset_is_not_shared():
    # my epoch 2 began at 350 but theirs at 300: only epoch 1 is common, up to 300
    assert F.consistent_end([E(1, 0), E(2, 350)], 900, [E(1, 0), E(2, 300)]) == 300


def test_no_common_term_cuts_everything_and_an_empty_file_keeps_the_old_prefix():
    assert F.consistent_end([E(5, 0)], 900, [E(1, 0), E(2, 300)]) == 0
    assert F.consistent_end([], 900, [E(1, 300)]) == 300
    assert F.consistent_end([], 0, [E(1, 300)]) == 0
