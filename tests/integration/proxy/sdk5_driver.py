"""Runs the official RocketMQ 5 Python SDK (PyPI rocketmq-python-client, unmodified) in its own
environment (.venv-sdk5: its top-level package ``rocketmq`` is also the C++ client's name).
Reads one JSON job from argv, prints one JSON line per result; the tests parse them.

Jobs: {"op": "send", "endpoints": "127.0.0.1:8081", "topic": ..., "messages": [{"body": str,
"tag": str, "keys": [str], "properties": {..}, "group": str, "delay_ms": int}], "mode":
"sync" | "async" | "transaction", "commit": bool}
"""

from __future__ import annotations

import json
import sys
import threading
import time


def message(topic: str, spec: dict):
    from rocketmq import Message

    msg = Message()
    msg.topic = topic
    msg.body = spec["body"].encode()
    if spec.get("tag"):
        msg.tag = spec["tag"]
    for key in spec.get("keys", []):
        msg.keys = key  # a setter of one key at a time: each adds to the set
    for key, value in spec.get("properties", {}).items():
        msg.add_property(key, value)
    if spec.get("group"):
        msg.message_group = spec["group"]
    if spec.get("delay_s"):
        # rocketmq-python-client 5.1.2 writes this value into Timestamp.seconds as it is: the
        # delivery time in epoch seconds is what reaches a Proxy intact
        msg.delivery_timestamp = int(time.time()) + spec["delay_s"]
    return msg


def report(**fields) -> None:
    print(json.dumps(fields), flush=True)


def send(job: dict) -> None:
    from rocketmq import (
        ClientConfiguration,
        Credentials,
        Producer,
        TransactionChecker,
        TransactionResolution,
    )

    checked = threading.Event()

    class Checker(TransactionChecker):
        def check(self, msg):
            report(checked=msg.message_id, topic=msg.topic, body=msg.body.decode())
            checked.set()
            if job.get("check_commits"):
                return TransactionResolution.COMMIT
            return TransactionResolution.ROLLBACK

    config = ClientConfiguration(
        job["endpoints"],
        Credentials(job.get("ak", ""), job.get("sk", "")),
        request_timeout=job.get("timeout", 10),
    )
    producer = Producer(
        config, (job["topic"],), checker=Checker(), tls_enable=job.get("tls", False)
    )
    producer.startup()
    try:
        futures = []
        for spec in job["messages"]:
            msg = message(job["topic"], spec)
            try:
                if job["mode"] == "async":
                    futures.append(producer.send_async(msg))
                    continue
                if job["mode"] == "transaction":
                    transaction = producer.begin_transaction()
                    receipt = producer.send(msg, transaction)
                    if job.get("commit") is not None:  # None: undecided, the broker asks
                        (transaction.commit if job["commit"] else transaction.rollback)()
                else:
                    receipt = producer.send(msg)
                report(ok=True, message_id=receipt.message_id, offset=receipt.offset)
            except Exception as exc:  # the test reads what the SDK raised
                report(ok=False, error=f"{type(exc).__name__}: {exc}")
        if job.get("await_check_s"):
            checked.wait(job["await_check_s"])
            time.sleep(0.5)  # the checker's answer (EndTransaction) goes out after check()
        for future in futures:
            try:
                receipt = future.result(timeout=30)
                report(ok=True, message_id=receipt.message_id, offset=receipt.offset)
            except Exception as exc:
                report(ok=False, error=f"{type(exc).__name__}: {exc}")
    finally:
        producer.shutdown()


def described(msg) -> dict:
    return {
        "message_id": msg.message_id,
        "topic": msg.topic,
        "body": msg.body.decode(),
        "tag": msg.tag,
        "keys": sorted(msg.keys),
        "properties": dict(msg.properties),
        "attempt": msg.delivery_attempt,
        "group": msg.message_group,
    }


def consume(job: dict) -> None:
    """Receive until ``count`` messages came (or ``deadline_s``); ack them unless told not to.
    With ``change_invisible_s``, the first delivery of each is made visible again that soon
    instead of acked, and the redelivery is acked."""
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

    config = ClientConfiguration(
        job["endpoints"], Credentials(job.get("ak", ""), job.get("sk", "")), request_timeout=10
    )
    consumer = SimpleConsumer(
        config,
        job["group"],
        {job["topic"]: FilterExpression(job.get("filter", "*"))},
        await_duration=job.get("await_s", 5),
    )
    consumer.startup()
    acked: set[str] = set()
    deadline = time.monotonic() + job.get("deadline_s", 60)
    try:
        while len(acked) < job["count"] and time.monotonic() < deadline:
            for msg in consumer.receive(32, job.get("invisible_s", 15)):
                report(received=described(msg))
                if job.get("change_invisible_s") and msg.delivery_attempt == 1:
                    consumer.change_invisible_duration(msg, job["change_invisible_s"])
                    continue
                if job.get("ack", True):
                    consumer.ack(msg)
                    acked.add(msg.message_id)
                    report(acked=msg.message_id)
    finally:
        consumer.shutdown()


def fifo_consume(job: dict) -> None:
    """A SimpleConsumer of a FIFO group receiving ``batch`` (1) at a time: the first receive's
    messages stay unacked over one more receive (what that one brings is reported with how
    many were unacked), then everything is acked as it comes."""
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

    config = ClientConfiguration(job["endpoints"], Credentials(), request_timeout=10)
    consumer = SimpleConsumer(config, job["group"], {job["topic"]: FilterExpression("*")}, 5)
    consumer.startup()
    pending, acked, held = [], 0, False
    deadline = time.monotonic() + job.get("deadline_s", 60)
    try:
        while acked < job["count"] and time.monotonic() < deadline:
            for msg in consumer.receive(job.get("batch", 1), job.get("invisible_s", 30)):
                report(received=described(msg), unacked=len(pending))
                pending.append(msg)
            if pending and not held:
                held = True
                continue
            for msg in pending:
                consumer.ack(msg)
                acked += 1
                report(acked=msg.message_id)
            pending.clear()
    finally:
        consumer.shutdown()


def push(job: dict) -> None:
    """A PushConsumer until ``count`` messages were consumed (or ``deadline_s``)."""
    from rocketmq import (
        ClientConfiguration,
        ConsumeResult,
        Credentials,
        FilterExpression,
        MessageListener,
        PushConsumer,
    )

    done = threading.Event()
    consumed: list[str] = []
    lock = threading.Lock()

    class Listener(MessageListener):
        def consume(self, message) -> ConsumeResult:
            started = time.monotonic()
            time.sleep(job.get("consume_s", 0))  # a slow listener
            with lock:
                report(received=described(message), started=started, ended=time.monotonic())
                if job.get("fail_first") and message.delivery_attempt == 1:
                    return ConsumeResult.FAILURE  # the SDK makes it visible again (backoff)
                consumed.append(message.message_id)
                if len(consumed) >= job["count"]:
                    done.set()
            return ConsumeResult.SUCCESS

    config = ClientConfiguration(
        job["endpoints"], Credentials(job.get("ak", ""), job.get("sk", "")), request_timeout=10
    )
    consumer = PushConsumer(
        config, job["group"], Listener(), {job["topic"]: FilterExpression(job.get("filter", "*"))}
    )
    consumer.startup()
    try:
        done.wait(job.get("deadline_s", 60))
        time.sleep(job.get("linger_s", 0))  # a redelivery, if any, would show up meanwhile
    finally:
        consumer.shutdown()


ASYNC_WINDOW = 256


def bench_send(job: dict) -> None:
    """``count`` messages of ``size`` bytes, sync one after another or async (up to
    ASYNC_WINDOW in flight); reports the seconds the sends took (start-up excluded)."""
    from rocketmq import ClientConfiguration, Credentials, Message, Producer

    producer = Producer(
        ClientConfiguration(job["endpoints"], Credentials(job.get("ak", ""), job.get("sk", ""))),
        (job["topic"],),
    )
    producer.startup()
    body = b"x" * job["size"]

    def new() -> Message:
        msg = Message()
        msg.topic, msg.body = job["topic"], body
        return msg

    try:
        producer.send(new())  # warm: route, channel, settings
        started = time.perf_counter()
        if job["mode"] == "async":
            # a window of sends in flight, as an application would keep: all 3,000 at once
            # outlast the SDK's own 3 s request timeout at the proxy's ~1,400 msg/s
            window: list = []
            for _ in range(job["count"]):
                if len(window) >= ASYNC_WINDOW:
                    window.pop(0).result(timeout=60)
                window.append(producer.send_async(new()))
            for future in window:
                future.result(timeout=60)
        else:
            for _ in range(job["count"]):
                producer.send(new())
        report(seconds=time.perf_counter() - started)
    finally:
        producer.shutdown()


def bench_receive(job: dict) -> None:
    """Receive and ack ``count`` messages with a SimpleConsumer; reports the seconds taken."""
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

    config = ClientConfiguration(
        job["endpoints"], Credentials(job.get("ak", ""), job.get("sk", "")), request_timeout=10
    )
    consumer = SimpleConsumer(config, job["group"], {job["topic"]: FilterExpression("*")}, 5)
    consumer.startup()
    try:
        done = 0
        started = time.perf_counter()
        while done < job["count"]:
            for msg in consumer.receive(32, 30):
                consumer.ack(msg)
                done += 1
        report(seconds=time.perf_counter() - started)
    finally:
        consumer.shutdown()


if __name__ == "__main__":
    job = json.loads(sys.argv[1])
    ops = {
        "send": send,
        "consume": consume,
        "push": push,
        "fifo_consume": fifo_consume,
        "bench_send": bench_send,
        "bench_receive": bench_receive,
    }
    ops[job["op"]](job)
