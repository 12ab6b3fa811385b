"""kill -9 at random moments: every acknowledged message survives, intact, exactly once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from broker.store.message_store import DefaultMessageStore
from remoting import message as codec
from remoting.record import MESSAGE_MAGIC_CODE
from tests.faults.store_writer import body, config
from tests.unit.store.test_queues import check_queues_match_log


def run_and_kill(root: Path, flush: str, rng: random.Random) -> list[tuple[int, int, int]]:
    """Start the writer, read a random number of ACK lines, SIGKILL it mid-stream."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.store_writer", str(root), flush],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    acks = []
    try:
        ready = proc.stdout.readline()
        assert ready.startswith(b"READY"), ready + proc.stderr.read()
        wanted = rng.randrange(1, 400)
        for line in proc.stdout:
            _, seq, queue_offset, phys = line.split()
            acks.append((int(seq), int(queue_offset), int(phys)))
            if len(acks) >= wanted:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert acks, "the writer acknowledged nothing"
    return acks


def verify(root: Path, flush: str, acked: dict[int, int]) -> int:
    store = DefaultMessageStore(config(root, flush), store_host=("127.0.0.1", 10911))
    report = store.load()
    try:
        assert report.mode == "abnormal"
        count = store.get_max_offset_in_queue("T", 0)
        assert count >= max(acked) + 1, f"lost acknowledged messages: {count} < {max(acked) + 1}"
        seen = set()
        offset = 0
        while offset < count:
            result = store.get_message("G", "T", 0, offset, 32, None)
            for buffer in result.buffers:
                message = codec.decode_message(buffer)
                seq = int(message.body.split(b";")[0].split(b"=")[1])
                assert message.queue_offset == offset and seq == offset, "duplicate or out of order"
                assert message.body == body(seq) and message.body_crc == codec.body_crc(
                    message.body
                )
                if seq in acked:
                    assert message.commit_log_offset == acked[seq]
                seen.add(seq)
                offset += 1
        assert seen == set(range(count))
        check_queues_match_log(store)
        return count
    finally:
        store.shutdown()


def crash_loop(tmp_path: Path, flush: str, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "store"
    acked: dict[int, int] = {}
    for _ in range(kills):
        for seq, queue_offset, phys in run_and_kill(root, flush, rng):
            assert seq == queue_offset
            acked[seq] = phys
        verify(root, flush, acked)
        # A verifying open is a clean stop: make the next start abnormal again, as after kill -9.
        (root / "abort").touch()
    assert len(list((root / "commitlog").iterdir())) > 1  # segments rolled during the run


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_kill_9_loses_no_acknowledged_message(tmp_path: Path, flush: str) -> None:
    crash_loop(tmp_path, flush, kills=8, seed=hash(flush) & 0xFFFF)


@pytest.mark.slow
@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_kill_9_many_times(tmp_path: Path, flush: str) -> None:
    crash_loop(tmp_path, flush, kills=100, seed=12345)


def test_torn_tail_after_kill_is_cut_and_appending_continues(tmp_path: Path) -> None:
    rng = random.Random(3)
    root = tmp_path / "store"
    acked = {seq: phys for seq, _, phys in run_and_kill(root, "ASYNC_FLUSH", rng)}
    count = verify(root, "ASYNC_FLUSH", acked)
    (root / "abort").touch()
    store = DefaultMessageStore(config(root, "ASYNC_FLUSH"), store_host=("127.0.0.1", 10911))
    store.load()
    end, last = store.max_phys_offset, store.commit_log.queue.last
    store.shutdown()
    (root / "abort").touch()
    with open(last.path, "r+b") as f:  # garbage, zeros and half a record after the last good one
        f.seek(end - last.start_offset)
        f.write(os.urandom(64) + bytes(32) + MESSAGE_MAGIC_CODE.to_bytes(4, "big", signed=True)[:2])
    assert verify(root, "ASYNC_FLUSH", acked) == count
    (root / "abort").touch()
    more = {seq: phys for seq, _, phys in run_and_kill(root, "ASYNC_FLUSH", rng)}
    assert min(more) == count  # appending continued where the good data ended
    verify(root, "ASYNC_FLUSH", {**acked, **more})
