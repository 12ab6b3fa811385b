"""A pipelined read's split and decode, in process: CPU µs per request from 64 KiB reads of
bench_broker's SEND_MESSAGE_V2 frames (pipe256's, ~45 a read) to their commands, as
``ReadBatches._take_commands`` makes them (the decoder's buffer, the split, each command).

Run from a tree's root with its venv (``python -m bench.bench_split``); in a tree without
``remoting.reading.take_commands`` (before the split scan) it times that tree's loop,
``take_frames`` and ``decode_command`` per frame, so two trees compare with the same script.
"""

from __future__ import annotations

import time
from typing import Any

from bench.bench_broker import QUEUES, send_frame
from remoting import reading
from remoting.command import decode_command
from remoting.frame import FrameDecoder

READ = 64 * 1024
ROUNDS = 200


def _reads() -> tuple[list[bytes], int]:
    """A stream of pipelined sends cut into 64 KiB reads, whole frames in it."""
    frames = [send_frame("PipeTopic", q) for q in range(QUEUES)]
    stream = b"".join(frames[i % len(frames)] for i in range(20 * READ // len(frames[0])))
    count = 20 * READ // len(frames[0])
    stream += frames[0] * 64  # the last read's partial frame completed
    count += 64
    return [stream[start : start + READ] for start in range(0, len(stream), READ)], count


def _take_old(decoder: FrameDecoder, commands: list[Any]) -> None:
    frames: list[Any] = []
    decoder.take_frames(frames)
    for frame in frames:
        commands.append(decode_command(frame))


def _one_pass(reads: list[bytes]) -> int:
    take = getattr(reading, "take_commands", _take_old)
    decoder, total = FrameDecoder(), 0
    for data in reads:
        decoder.receive_data(data)
        commands: list[Any] = []
        take(decoder, commands)
        total += len(commands)
    return total


def main() -> None:
    reads, _ = _reads()
    per = _one_pass(reads)
    best = float("inf")
    for _ in range(7):
        started = time.process_time()
        for _ in range(ROUNDS):
            _one_pass(reads)
        best = min(best, (time.process_time() - started) / ROUNDS / per * 1e6)
    path = "take_commands" if hasattr(reading, "take_commands") else "take_frames+decode"
    print(f"split+decode ({path}): {best:.3f} us CPU per request ({per} per pass)")


if __name__ == "__main__":
    main()
