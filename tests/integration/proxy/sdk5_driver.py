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

    class Checker(TransactionChecker):
        def check(self, msg):
            return (
                TransactionResolution.COMMIT
                if job.get("commit")
                else TransactionResolution.ROLLBACK
            )

    config = ClientConfiguration(
        job["endpoints"], Credentials(), request_timeout=job.get("timeout", 10)
    )
    producer = Producer(config, (job["topic"],), checker=Checker())
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
                    (transaction.commit if job.get("commit") else transaction.rollback)()
                else:
                    receipt = producer.send(msg)
                report(ok=True, message_id=receipt.message_id, offset=receipt.offset)
            except Exception as exc:  # the test reads what the SDK raised
                report(ok=False, error=f"{type(exc).__name__}: {exc}")
        for future in futures:
            try:
                receipt = future.result(timeout=30)
                report(ok=True, message_id=receipt.message_id, offset=receipt.offset)
            except Exception as exc:
                report(ok=False, error=f"{type(exc).__name__}: {exc}")
    finally:
        producer.shutdown()


if __name__ == "__main__":
    job = json.loads(sys.argv[1])
    {"send": send}[job["op"]](job)
