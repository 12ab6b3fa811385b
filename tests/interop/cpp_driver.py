"""Drives the official C++ client (PyPI ``rocketmq==0.4.4``) in its own process: the native
library runs its own threads, logs to ~/logs and can hang, so tests only ever talk to it
through this script's arguments and its JSON-lines stdout.

    python -m tests.interop.cpp_driver produce --ns ADDR --topic T --count N --mode sync
    python -m tests.interop.cpp_driver consume --ns ADDR --topic T --group G --expr '*' --expect N

Either takes ``--access-key K --secret-key S [--channel C]`` to sign every request (ACL): the
client's ``set_session_credentials``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def produce(args: argparse.Namespace) -> int:
    from rocketmq.client import Message, Producer

    producer = Producer(args.group, timeout=args.send_timeout_ms)
    producer.set_namesrv_addr(args.ns)
    if args.access_key:
        producer.set_session_credentials(args.access_key, args.secret_key, args.channel)
    producer.start()
    failures = 0
    try:
        for i in range(args.start, args.start + args.count):
            msg = Message(args.topic)
            tag = args.tags.split(",")[i % len(args.tags.split(","))]
            msg.set_keys(f"key-{i}")
            msg.set_tags(tag)
            msg.set_body(f"body-{i}")
            try:
                if args.mode == "oneway":
                    producer.send_oneway(msg)
                    emit(sent=i, key=f"key-{i}", tag=tag)
                    continue
                if args.mode == "orderly":
                    result = producer.send_orderly(msg, i)
                else:
                    result = producer.send_sync(msg)
                emit(
                    sent=i,
                    key=f"key-{i}",
                    tag=tag,
                    status=int(result.status),
                    msg_id=result.msg_id,
                    offset=result.offset,
                )
            except Exception as exc:  # the binding raises on a failed send
                failures += 1
                emit(failed=i, error=str(exc)[:300])
                if args.stop_on_error:
                    return 1
            if args.interval_ms:
                time.sleep(args.interval_ms / 1000)
    finally:
        producer.shutdown()
    emit(done=True, failures=failures)
    return 0


def consume(args: argparse.Namespace) -> int:
    from rocketmq.client import PushConsumer

    seen: dict[str, int] = {}
    done = threading.Event()
    lock = threading.Lock()

    def on_message(msg) -> None:
        t0 = time.monotonic()
        if args.delay_ms:
            time.sleep(args.delay_ms / 1000)
        key = msg.keys.decode() if isinstance(msg.keys, bytes) else msg.keys
        topic = msg.topic.decode() if isinstance(msg.topic, bytes) else msg.topic
        with lock:
            if args.reconsume_first and msg.reconsume_times == 0:
                emit(reconsume_later=key)
                # The binding turns an exception into RECONSUME_LATER for the batch.
                raise RuntimeError("reconsume later")
            seen[key] = seen.get(key, 0) + 1
            tags = msg.tags.decode() if isinstance(msg.tags, bytes) else msg.tags
            body = msg.body.decode() if isinstance(msg.body, bytes) else msg.body
            emit(
                received=key,
                tag=tags,
                body=body,
                topic=topic,
                reconsume_times=msg.reconsume_times,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
                t0=t0,
                t1=time.monotonic(),
            )
            if len(seen) >= args.expect:
                done.set()

    consumer = PushConsumer(args.group, orderly=args.orderly)
    consumer.set_namesrv_addr(args.ns)
    consumer.set_thread_count(args.threads)
    if args.access_key:
        consumer.set_session_credentials(args.access_key, args.secret_key, args.channel)
    consumer.subscribe(args.topic, on_message, args.expr)
    consumer.start()
    emit(started=True)
    try:
        deadline = time.monotonic() + args.timeout
        while not done.is_set() and time.monotonic() < deadline:
            if args.stop_file and os.path.exists(args.stop_file):
                break
            done.wait(0.1)
        if args.linger:
            time.sleep(args.linger)  # keep consuming (duplicates would show up here)
    finally:
        consumer.shutdown()
    emit(done=done.is_set(), distinct=len(seen))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("produce")
    p.add_argument("--ns", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", default="CppProducer")
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--mode", choices=["sync", "oneway", "orderly"], default="sync")
    p.add_argument("--tags", default="TagA,TagB")
    p.add_argument("--send-timeout-ms", type=int, default=3000)
    p.add_argument("--stop-on-error", action="store_true")
    p.add_argument("--interval-ms", type=int, default=0, help="pause after each send")
    c = sub.add_parser("consume")
    c.add_argument("--ns", required=True)
    c.add_argument("--topic", required=True)
    c.add_argument("--group", required=True)
    c.add_argument("--expr", default="*")
    c.add_argument("--expect", type=int, required=True)
    c.add_argument("--timeout", type=float, default=60)
    c.add_argument("--linger", type=float, default=0)
    c.add_argument("--threads", type=int, default=4)
    c.add_argument("--orderly", action="store_true")
    c.add_argument("--reconsume-first", action="store_true")
    c.add_argument("--delay-ms", type=int, default=0, help="time each message takes")
    c.add_argument("--stop-file", help="stop consuming once this file exists")
    for command in (p, c):
        command.add_argument("--access-key", help="sign requests (ACL) with this account")
        command.add_argument("--secret-key", default="")
        command.add_argument("--channel", default="LOCAL", help="the OnsChannel extField")
    args = parser.parse_args()
    return produce(args) if args.command == "produce" else consume(args)


if __name__ == "__main__":
    sys.exit(main())
