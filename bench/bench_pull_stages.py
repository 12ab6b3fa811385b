"""The pull path's stages in one process, without sockets: µs per PULL_MESSAGE of 32 stored
1 KiB messages (the bench's pull 32) for the JSON command header, the processor's whole
``handle`` (header, checks, filter, GetMessage, the reply; for a request decoded from extFields,
and for one whose header the C scanned as the broker's read does: the plain pass,
broker/processor/pull_plain.py) and the reply's encoding where the handler leaves it to the
transport. The
broker's CPU per request over loopback minus their sum is the I/O and the event loop
(bench_ab's pull32; docs/scaling.md uses both)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio

from bench.bench_broker import pull_frame
from bench.consumer_frames import CONSUMER_GROUP, SUB_VERSION, consume_frame
from broker.client_manager import ClientChannelInfo
from broker.config import load_broker_config
from broker.controller import BrokerController
from broker.store.types import MessageExtBrokerInner
from remoting.body import ConsumerData, SubscriptionData, TopicConfig
from remoting.command import RemotingCommand, decode_command, decode_declined, encode_command
from remoting.frame import Frame, FrameDecoder

ROUNDS = 20_000


def per_call_us(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(rounds):
            fn()
        best = min(best, (time.perf_counter() - started) / rounds * 1e6)
    return best


def controller(root: Path) -> BrokerController:
    config, store_config = load_broker_config(
        {
            "brokerName": "bench",
            "brokerIP1": "127.0.0.1",
            "storePathRootDir": str(root),
            "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
            "maxTransferCountOnMessageInMemory": "32",
            "maxTransferBytesOnMessageInMemory": "262144",
        },
        warn=False,
    )
    broker = BrokerController(config, store_config)
    broker.load()
    broker.topics.update(TopicConfig(topic_name="PullTopic", read_queue_nums=4, write_queue_nums=4))
    body = b"x" * 1024
    for _ in range(64):
        broker.store.put_message(
            MessageExtBrokerInner(
                topic="PullTopic", queue_id=0, body=body, properties={},
                born_host=(b"\x7f\x00\x00\x01", 40000),
            )
        )  # fmt: skip
    while broker.store.reput.do_reput(1024):
        pass
    return broker


def consumer_pull(broker: BrokerController) -> RemotingCommand:
    """A Java push consumer's pull (commit and suspend flags, the subscription its heartbeat
    registered, bench_ab's consume32), its group registered as a heartbeat does."""
    channel = _Connection()
    info = ClientChannelInfo(
        channel=channel, client_id="127.0.0.1@bench", language="JAVA", version=409, last_update=0
    )
    sub = SubscriptionData(topic="PullTopic", sub_version=SUB_VERSION)
    broker.clients.register_consumer(
        info, ConsumerData(group_name=CONSUMER_GROUP, subscription_data_set=[sub])
    )
    decoder = FrameDecoder()
    decoder.receive_data(consume_frame(0, 5, posted=False) * 2)
    request = decode_command(decoder.next_frame())
    response = broker.pull_processor.handle(channel, request)  # the names seen valid
    assert response.code == 0, response
    return decode_command(decoder.next_frame())  # scanned as the broker's would be


def _scanned(data: bytes) -> RemotingCommand:
    """The command as the broker's read makes it (remoting/reading.py: ``whole_command``)."""
    command = FrameDecoder().whole_command(data)
    if type(command) is Frame:
        command = decode_declined(command)
    assert command.header_values is not None, "not scanned: the plain pass would not run"
    return command


class _Connection:
    peer = "127.0.0.1:40000"
    attributes: dict = {}

    def send_nowait(self, request: object) -> None:
        pass  # the consumer group's change notice


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-pull-stages-"))
    try:
        trio.run(_main, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _main(root: Path) -> None:
    broker = controller(root)
    decoder = FrameDecoder()
    decoder.receive_data(pull_frame("PullTopic", 0, 0))
    frame = decoder.next_frame()
    request = decode_command(frame)
    handle, connection = broker.pull_processor.handle, _Connection()
    response = handle(connection, request)
    encoded = not isinstance(response, RemotingCommand)  # the handler's own frame
    size = sum(map(len, response.buffers[1:])) if encoded else len(response.body)
    assert response.code == 0 and size > 32 * 1024, response
    consumer = consumer_pull(broker)
    scanned = _scanned(pull_frame("PullTopic", 0, 0))  # the names seen valid by handle above
    scanned_consumer = _scanned(consume_frame(0, 5, posted=False))
    rows = [
        ("JSON command header (decode_command)", per_call_us(lambda: decode_command(frame))),
        ("PullMessageProcessor.handle", per_call_us(lambda: handle(connection, request))),
        (
            "the same, a push consumer's pull (commit)",
            per_call_us(lambda: handle(connection, consumer)),
        ),
        (
            "handle, header scanned (the plain pass)",
            per_call_us(lambda: handle(connection, scanned)),
        ),
        (
            "the same, a push consumer's pull",
            per_call_us(lambda: handle(connection, scanned_consumer)),
        ),
    ]
    if not encoded:
        rows.append(
            ("reply encode (encode_command)", per_call_us(lambda: encode_command(response)))
        )
    for label, us in rows:
        print(f"{label:<44} {us:7.2f} µs per request")


if __name__ == "__main__":
    main()
