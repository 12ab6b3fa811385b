"""A plain SEND_BATCH_MESSAGE through the send processor in one process, without sockets: µs per
request of 32 x 1 KiB (its JSON header decoded already) through ``SendMessageProcessor.handle``
(the batch pass, broker/processor/send_batch_plain.py) and through ``reference_group`` (the
reference: header object, checks, MessageExtBrokerInner, put_messages, the response command
and its encoding), alternating, on one broker's store; thread CPU, the minimum of the rounds.
What it leaves out is the read, the JSON header, the reply write and the event loop
(bench_ab)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from bench.bench_broker import send_frame
from bench.bench_send_group import Peer
from broker.config import load_broker_config
from broker.controller import BrokerController
from remoting.body import TopicConfig
from remoting.command import RemotingCommand, decode_command, encode_command
from remoting.frame import FrameDecoder

REQUESTS = 300
ROUNDS = 7


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-batch-pass-"))
    config, store_config = load_broker_config(
        {"storePathRootDir": str(root), "brokerIP1": "127.0.0.1", "listenPort": "20911"}
    )
    broker = BrokerController(config, store_config)
    broker.store.load()
    broker.topics.update(
        TopicConfig(topic_name="BatchTopic", read_queue_nums=4, write_queue_nums=4)
    )
    decoder = FrameDecoder()
    decoder.receive_data(send_frame("BatchTopic", 1, batch=32))
    request = decode_command(decoder.next_frame())
    peer = Peer()
    send = broker.send

    def reference() -> None:
        response = send.reference_group(peer, [request])[0]
        assert type(response) is RemotingCommand
        encode_command(response)  # the connection encodes what the reference answers

    def plain() -> None:
        send.handle(peer, request)

    paths = {"batch pass": plain, "reference": reference}
    best = dict.fromkeys(paths, float("inf"))
    try:
        reference()  # the first segment, warm caches
        for _ in range(ROUNDS):
            for label, run in paths.items():
                started = time.thread_time()
                for _ in range(REQUESTS):
                    run()
                us = (time.thread_time() - started) / REQUESTS * 1e6
                best[label] = min(best[label], us)
    finally:
        broker.store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    for label, us in best.items():
        print(f"{label:<11} {us:7.1f} us per request of 32 ({us / 32:.2f} per message)")
    print(f"batch pass / reference {best['batch pass'] / best['reference']:.2f}")


if __name__ == "__main__":
    main()
