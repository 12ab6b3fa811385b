"""A real push consumer's requests for bench_ab (issue 27): its PULL_MESSAGE as Java's
DefaultMQPushConsumerImpl.pullMessage sends it, UPDATE_CONSUMER_OFFSET, the heartbeat that
registers its subscription, and a live consume (long polling woken by a producer's sends)."""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Any

from bench import loadgen
from bench.bench_broker import Broker, frame, send_frame
from remoting.body import ConsumerData, HeartbeatData, SubscriptionData
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import PullMessageRequestHeader, UpdateConsumerOffsetRequestHeader
from remoting.java_hash import tags_code
from remoting.serde import encode_body, encode_header_fields

# A push consumer's pulls (Java's DefaultMQPushConsumerImpl.pullMessage): FLAG_COMMIT_OFFSET once
# it has an offset in memory, FLAG_SUSPEND always, FLAG_SUBSCRIPTION only with
# postSubscriptionWhenPull (false by default in Java; the broker then takes the subscription
# its heartbeat registered); suspendTimeoutMillis 15000, the subscription's subVersion.
CONSUMER_GROUP = "BenchConsumer"
SUB_VERSION = 1700000000000
COMMIT, SUSPEND, SUBSCRIPTION = 0x1, 0x2, 0x4


def consume_frame(
    queue_id: int,
    commit_offset: int,
    *,
    posted: bool,
    topic: str = "PullTopic",
    queue_offset: int = 0,
) -> bytes:
    """A push consumer's PULL_MESSAGE of 32 from ``queue_id`` at ``queue_offset``, committing
    ``commit_offset``; ``posted``: the subscription sent with it (FLAG_SUBSCRIPTION, as the
    C++ and Go clients' option)."""
    header = PullMessageRequestHeader(
        consumer_group=CONSUMER_GROUP,
        topic=topic,
        queue_id=queue_id,
        queue_offset=queue_offset,
        max_msg_nums=32,
        sys_flag=COMMIT | SUSPEND | (SUBSCRIPTION if posted else 0),
        commit_offset=commit_offset,
        suspend_timeout_millis=15000,
        sub_version=SUB_VERSION,
        subscription="TagA" if posted else None,
        expression_type="TAG",
    )
    return frame(RemotingCommand.request(RequestCode.PULL_MESSAGE, encode_header_fields(header)))


def offset_frame(queue_id: int, commit_offset: int) -> bytes:
    """UPDATE_CONSUMER_OFFSET as a consumer's offset store persists (answered: the load
    generator waits for every reply; Java's periodic persist sends it oneway)."""
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=CONSUMER_GROUP,
        topic="PullTopic",
        queue_id=queue_id,
        commit_offset=commit_offset,
    )
    code = RequestCode.UPDATE_CONSUMER_OFFSET
    return frame(RemotingCommand.request(code, encode_header_fields(header)))


HEARTBEAT_S = 20.0  # a broker drops a client not heard from for 120 s (Java's clients: 30 s)


class HeldConsumer:
    """The consumer group's subscription (PullTopic and the live topic, tag TagA) registered by
    heartbeats on a connection kept open for the run, every ``HEARTBEAT_S`` as a client's: the
    group's consumer data lives while one of its channels is heard from."""

    def __init__(self, broker: Broker) -> None:
        sub = [
            SubscriptionData(
                topic=topic,
                sub_string="TagA",
                tags_set={"TagA"},
                code_set={tags_code("TagA")},
                sub_version=SUB_VERSION,
            )
            for topic in ("PullTopic", LIVE_TOPIC)
        ]
        data = HeartbeatData(
            client_id="127.0.0.1@bench",
            consumer_data_set=[ConsumerData(group_name=CONSUMER_GROUP, subscription_data_set=sub)],
        )
        self._heartbeat = encode_body(data)
        self._sock = socket.create_connection(broker.addr)
        self._stop = threading.Event()
        self.beat()
        self._thread = threading.Thread(target=self._beating, daemon=True)
        self._thread.start()

    def beat(self) -> None:
        request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, self._heartbeat)
        self._sock.sendall(frame(request))
        while True:  # the broker may ask first (NOTIFY_CONSUMER_IDS_CHANGED, a request: flag 0)
            (length,) = struct.unpack(">i", _recv_exactly(self._sock, 4))
            data = _recv_exactly(self._sock, length)
            header = json.loads(data[4 : 4 + (int.from_bytes(data[:4], "big") & 0xFFFFFF)])
            if header.get("flag", 0) & 1:
                break
        if header["code"] != 0:
            raise SystemExit(f"the consumer's heartbeat was refused ({header})")

    def _beating(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.beat()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise SystemExit("the broker closed the consumer's heartbeat connection")
        data += chunk
    return data


# The live consume: a producer's sync sends to one queue while the consumer, caught up, pulls
# it as a push consumer does (each pull found nothing suspends until the next arrival wakes it).
LIVE_TOPIC = "LiveTopic"
LIVE_MESSAGES = 20_000  # per slice: sent, then all consumed
# the same offset again: PULL_NOT_FOUND (the suspend timed out), PULL_RETRY_IMMEDIATELY
_PULL_AGAIN = (int(ResponseCode.PULL_NOT_FOUND), int(ResponseCode.PULL_RETRY_IMMEDIATELY))


def create_live_topic(broker: Broker) -> int:
    """The topic made by its first message (before the consumer's first pull): how many
    messages its queue 0 holds."""
    loadgen.run(broker.addr, [[send_frame(LIVE_TOPIC, 0)]], duration_s=60, max_requests=1)
    return 1


def live_consume(broker: Broker, start: int) -> tuple[int, float]:
    """``LIVE_MESSAGES`` sent to the live queue (its offsets from ``start``) on one connection
    while a second one consumes them; (messages consumed, wall seconds of the slice)."""
    target = start + LIVE_MESSAGES
    state = {"offset": start, "refused": 0}

    def next_pull(code: int, body: Any) -> bytes | None:
        if code == 0:
            state["offset"] += loadgen.count_records(body)
        elif code not in _PULL_AGAIN:
            state["refused"] = code
            return None
        if state["offset"] >= target:
            return None
        offset = state["offset"]
        return consume_frame(0, offset, posted=False, topic=LIVE_TOPIC, queue_offset=offset)

    first = consume_frame(0, start, posted=False, topic=LIVE_TOPIC, queue_offset=start)
    consumed: list[loadgen.WorkerResult] = []
    consumer = threading.Thread(
        target=lambda: consumed.extend(
            loadgen.run(broker.addr, [[first]], duration_s=120, next_frame=next_pull)
        )
    )
    consumer.start()
    sent = loadgen.run(
        broker.addr, [[send_frame(LIVE_TOPIC, 0)]], duration_s=120, max_requests=LIVE_MESSAGES
    )
    consumer.join()
    if consumed[0].records < LIVE_MESSAGES:
        raise SystemExit(f"live consume: {consumed[0].records} consumed (a pull got {state})")
    if sent[0].errors or sent[0].requests != LIVE_MESSAGES:
        raise SystemExit(f"live consume: the sends failed ({sent[0]})")
    return consumed[0].records, max(consumed[0].elapsed_s, sent[0].elapsed_s)
