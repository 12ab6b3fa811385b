"""``python -m bench.console_screenshots OUT_DIR [SECONDS]``: the README's console screenshots.

Stages a slow consumer on a fresh NameServer and broker and photographs it in headless
Chromium: producers send orders and payments for SECONDS (480 by default); PaymentService
keeps up, while OrderService's two members take ~80 ms a message and fall behind, so its
lag climbs. mqconsole samples every 5 s; at the end the cluster page (brokers, put/get TPS)
and OrderService's group page (members, lag per queue in messages and seconds, lag over
time) are saved as OUT_DIR/console-cluster.png and OUT_DIR/console-group.png (1400 wide).

Not a benchmark (``python -m bench`` skips it: its name does not start with ``bench_``); it
lives here beside bench_console.py, whose process helpers it uses.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import trio

from bench.bench_console import CHROMIUM_ARGS, free_base, start
from client.admin import AdminClient
from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message
from client.producer import Producer
from client.sync import SyncPushConsumer
from remoting.body import ConsumeFromWhere, TopicConfig

SAMPLE_INTERVAL_S = 5
TOPICS = {"Orders": 8, "Payments": 4, "Shipments": 4, "Audit": 2}
RATES = {"Orders": 40, "Payments": 15}  # messages per second
SLOW_S = 0.08  # an OrderService member's time per message: two of them take ~25 of the 40/s


async def produce(ns: str, topic: str, rate: int, until: float) -> None:
    async with Producer.open(ns, f"PG-{topic}") as producer:
        n = 0
        while time.monotonic() < until:
            body = f'{{"{topic[:-1].lower()}": {n}, "amount": {n % 97 + 3}.50}}'.encode()
            await producer.send(Message(topic, body, keys=f"{topic[0]}{n}"))
            n += 1
            await trio.sleep(1 / rate)


async def consume(ns: str, group: str, topic: str, seconds: float) -> None:
    def listener(msgs) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer.open(
        ns, group, listener, {topic: "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):  # fmt: skip
        await trio.sleep(seconds)


async def scene(ns: str, seconds: float) -> None:
    async with AdminClient.open(ns) as admin:
        addr = next(iter((await admin.masters()).values()))
        for topic, queues in TOPICS.items():
            config = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
            await admin.create_topic(addr, config)
        with trio.fail_after(60):
            while True:
                try:
                    await admin.topic_route("Audit")
                    break
                except Exception:
                    await trio.sleep(0.2)
    until = time.monotonic() + seconds
    async with trio.open_nursery() as nursery:
        for topic, rate in RATES.items():
            nursery.start_soon(produce, ns, topic, rate, until)
        nursery.start_soon(consume, ns, "PaymentService", "Payments", seconds + 5)


def slow_member(ns: str, name: str) -> SyncPushConsumer:
    """An OrderService member on its own thread and loop (its listener blocks it)."""

    def listener(msgs) -> ConsumeStatus:
        time.sleep(SLOW_S * len(msgs))
        return ConsumeStatus.CONSUME_SUCCESS

    return SyncPushConsumer(
        ns, "OrderService", listener, {"Orders": "*"}, instance_name=name,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )  # fmt: skip


def photograph(url: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=shutil.which("chromium") or "/usr/bin/chromium",
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 900},
        )
        page = context.new_page()
        # the cluster page whole (it is short), the group page's first screen
        shots = (
            ("cluster", "/cluster", 420, True),
            ("group", "/group?group=OrderService", 900, False),
        )
        for name, path, height, full in shots:
            page.set_viewport_size({"width": 1400, "height": height})
            page.goto(url + path, timeout=120_000)
            page.screenshot(path=str(out / f"console-{name}.png"), full_page=full)
            print(f"saved {out / f'console-{name}.png'}")
        context.close()


def main(argv: list[str]) -> None:
    out = Path(argv[0]).resolve()
    seconds = float(argv[1]) if len(argv) > 1 else 480.0
    out.mkdir(parents=True, exist_ok=True)
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="console-shots-", dir=shm if shm.is_dir() else None))
    procs = []
    try:
        conf = root / "namesrv.conf"
        conf.write_text(f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={root}/kv.json\n")
        ns_proc, ns_port = start([sys.executable, "-m", "namesrv", "-c", str(conf)], root / "ns")
        procs.append(ns_proc)
        ns = f"127.0.0.1:{ns_port}"
        base = free_base()
        conf = root / "broker.conf"
        conf.write_text(
            f"brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerIP1=127.0.0.1\n"
            f"listenPort={base + 2}\nhaListenPort={base + 3}\nnamesrvAddr={ns}\n"
            f"storePathRootDir={root}/store\nmappedFileSizeCommitLog={64 * 1024 * 1024}\n"
            "diskSpaceWarningLevelRatio=0.99\n"
        )
        broker, _ = start([sys.executable, "-m", "broker", "-c", str(conf)], root / "broker")
        procs.append(broker)
        argv = [sys.executable, "-m", "console", "-n", ns, "--port", "0"]
        argv += ["--sample-interval", str(SAMPLE_INTERVAL_S), "--log-level", "WARNING"]
        console, port = start(argv, root / "console")
        procs.append(console)
        members = [slow_member(ns, f"order-{i}") for i in (1, 2)]
        try:
            trio.run(scene, ns, seconds)
            photograph(f"http://127.0.0.1:{port}", out)
        finally:
            for member in members:
                member.close()
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(60)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
