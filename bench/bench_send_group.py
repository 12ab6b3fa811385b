"""The send processor's group handler in one process, without sockets: µs per 1 KiB message of
a read's 48 pipelined SEND_MESSAGE_V2 requests to one queue (their JSON headers decoded
already; ``python -m bench.bench_send_group GROUP QUEUES`` for another group, e.g. ``4 4``: a
selector round of sync sends on 8 connections, spread over 4 queues) through
``SendMessageProcessor.handle_group`` (the plain pass, broker/processor/send_plain.py) and
through ``reference_group``, alternating, on one broker's store. What it leaves out is the
read, the JSON header, the reply write and the event loop (bench_send_stages, bench_ab)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_codec import _request
from broker.config import load_broker_config
from broker.controller import BrokerController
from remoting.body import TopicConfig
from remoting.codes import SerializeType
from remoting.command import decode_command, encode_command_bytes
from remoting.frame import FrameDecoder

GROUP = 48
GROUPS = 400
ROUNDS = 5


class Peer:
    peer = "127.0.0.1:40404"

    def __init__(self) -> None:
        self.attributes: dict[str, object] = {}


def main() -> None:
    group = int(sys.argv[1]) if len(sys.argv) > 1 else GROUP
    queues = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    groups = GROUPS * GROUP // group  # the same messages per round whatever the group
    root = Path(tempfile.mkdtemp(prefix="bench-group-"))
    config, store_config = load_broker_config(
        {"storePathRootDir": str(root), "brokerIP1": "127.0.0.1", "listenPort": "20911"}
    )
    broker = BrokerController(config, store_config)
    broker.store.load()
    broker.topics.update(
        TopicConfig(topic_name="BenchTopic", read_queue_nums=4, write_queue_nums=4)
    )
    decoder = FrameDecoder()
    decoder.receive_data(
        b"".join(
            encode_command_bytes(_request(SerializeType.JSON, n % queues if queues > 1 else 1))
            for n in range(group)
        )
    )
    requests = [decode_command(frame) for frame in iter(decoder.next_frame, None)]
    peer = Peer()
    send = broker.send
    paths = {"plain pass": send.handle_group, "reference": send.reference_group}
    best = dict.fromkeys(paths, float("inf"))
    try:
        send.reference_group(peer, requests)  # the first segment, warm caches
        for _ in range(ROUNDS):
            for label, handle in paths.items():
                started = time.process_time()  # CPU: other processes' load does not count
                for _ in range(groups):
                    handle(peer, requests)
                us = (time.process_time() - started) / (groups * group) * 1e6
                best[label] = min(best[label], us)
    finally:
        broker.store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    for label, us in best.items():
        print(f"handle_group, {label:<12} {us:6.2f} us per message", flush=True)
    print(f"plain / reference {best['plain pass'] / best['reference']:.2f}")


if __name__ == "__main__":
    main()
