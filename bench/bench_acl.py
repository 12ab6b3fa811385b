"""What ACL costs the broker: the same sync sends (1 and 8 connections) and batch sends
(32 x 1 KiB, 8 connections) against two brokers of one run, one with ``aclEnable=false`` and
one with ``aclEnable=true`` (every request signed, checked against plain_acl.yml), measured in
alternating rounds so both see the same machine. Prints each round, then per workload the
median rate with ACL on / off and the broker's CPU per message. Printed, never asserted."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from acl.credentials import SessionCredentials
from bench import loadgen
from bench.bench_broker import BODY, QUEUES, Broker, frame
from remoting import message as codec
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.headers import SendMessageRequestHeaderV2
from remoting.serde import encode_header_fields

ROUNDS = int(os.environ.get("BENCH_ACL_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
USER = SessionCredentials("benchUser1", "benchSecret1")
PLAIN_ACL = f"""\
accounts:
  - accessKey: {USER.access_key}
    secretKey: {USER.secret_key}
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - SyncTopic=PUB|SUB
      - BatchTopic=PUB|SUB
"""


def send_frame(topic: str, queue_id: int, *, batch: int = 0, signed: bool) -> bytes:
    props = (
        "KEYS\x01k\x02TAGS\x01TagA\x02UNIQ_KEY\x010A0B0C0D00002A9F0000000000000001\x02WAIT\x01true"
    )
    header = SendMessageRequestHeaderV2(
        a="PG", b=topic, c="TBW102", d=QUEUES, e=queue_id, f=0, g=int(time.time() * 1000), h=0,
        i=props if not batch else "WAIT\x01true", m=bool(batch),
    )  # fmt: skip
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    body = (
        codec.encode_batch_body(
            [(0, BODY, f"UNIQ_KEY\x01U{i}\x02TAGS\x01TagA") for i in range(batch)]
        )
        if batch
        else BODY
    )
    command = RemotingCommand.request(code, encode_header_fields(header), body)
    if signed:
        USER.sign(command)  # the signature does not cover the opaque: one frame serves all
    return frame(command)


def workloads(signed: bool) -> list[tuple[str, list[list[bytes]], int]]:
    return [
        ("sync send, 1 connection", [[send_frame("SyncTopic", q, signed=signed) for q in range(QUEUES)]], 1),
        (
            "sync send, 8 connections",
            [[send_frame("SyncTopic", (w + q) % QUEUES, signed=signed) for q in range(QUEUES)] for w in range(8)],
            1,
        ),
        ("batch send 32x1KiB, 8 connections", [[send_frame("BatchTopic", w % QUEUES, batch=32, signed=signed)] for w in range(8)], 32),
    ]  # fmt: skip


def measure(
    broker: Broker, frames: list[list[bytes]], per_request: int
) -> tuple[float, float, int]:
    """(msg/s, broker CPU-microseconds per message, errors)."""
    cpu0 = broker.cpu_s()
    results = loadgen.run(broker.addr, frames, duration_s=SECONDS)
    cpu = broker.cpu_s() - cpu0
    requests = sum(r.requests for r in results)
    errors = sum(r.errors for r in results)
    messages = requests * per_request
    return messages / max(r.elapsed_s for r in results), cpu / max(messages, 1) * 1e6, errors


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-acl-"))
    (root / "conf").mkdir()
    (root / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    brokers = {
        "off": Broker(root, 31911, name="acl-off"),
        "on": Broker(root, 32911, f"aclEnable=true\nrocketmqHome={root}\n", name="acl-on"),
    }
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for side, broker in brokers.items():  # warm both, creating the topics
            loadgen.run(broker.addr, workloads(side == "on")[0][1], duration_s=1)
        for round_no in range(ROUNDS):
            order = ("off", "on") if round_no % 2 == 0 else ("on", "off")
            for label, _, per_request in workloads(False):
                for side in order:
                    frames = next(w[1] for w in workloads(side == "on") if w[0] == label)
                    rate, cpu_us, errors = measure(brokers[side], frames, per_request)
                    figures.setdefault((label, side), []).append((rate, cpu_us))
                    print(
                        f"round {round_no + 1} ACL {side:<3} {label:<34} {rate:>9,.0f} msg/s  "
                        f"broker CPU {cpu_us:6.1f} us/msg  errors {errors}",
                        flush=True,
                    )
        print()
        for label, _, _ in workloads(False):
            off = figures[(label, "off")]
            on = figures[(label, "on")]
            rate_off = statistics.median(r for r, _ in off)
            rate_on = statistics.median(r for r, _ in on)
            cpu_off = statistics.median(c for _, c in off)
            cpu_on = statistics.median(c for _, c in on)
            print(
                f"{label:<34} ACL on/off rate {rate_on / rate_off:5.2f}  "
                f"({rate_on:,.0f} vs {rate_off:,.0f} msg/s)  broker CPU per message "
                f"{cpu_on:.1f} vs {cpu_off:.1f} us (+{cpu_on - cpu_off:.1f} us)",
                flush=True,
            )
    finally:
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
