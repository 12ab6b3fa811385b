"""mqconsole's page load times against a broker with 1,000 topics (8 queues each) and 50
subscription groups, one of which consumed a topic and lags on it. Each page is fetched once
to warm up, then ROUNDS times over HTTP (the whole body read: server time plus transfer on
loopback); with Debian's chromium and Playwright present, each page is also loaded in headless
Chromium and its navigation timing (request start to load event) read. Prints the median and
the slowest per page; never asserts."""

from __future__ import annotations

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import trio

from client.admin import AdminClient
from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeFromWhere, SubscriptionGroupConfig, TopicConfig

TOPICS = int(os.environ.get("BENCH_CONSOLE_TOPICS", "1000"))
GROUPS = 50
QUEUES = 8
ROUNDS = int(os.environ.get("BENCH_CONSOLE_ROUNDS", "5"))
READY = re.compile(r"READY\b.*\bport=(\d+)")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def start(argv: list[str], log: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        match = READY.search(line)
        if match:
            return proc, int(match.group(1))
    raise RuntimeError(f"{argv[2]} did not start: see {log}")


def free_base() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base < 60000:
            return base


async def populate(ns: str) -> str:
    """The topics and groups; returns the offsetMsgId of one message (for the message page)."""
    async with AdminClient.open(ns) as admin:
        limiter = trio.CapacityLimiter(8)
        addr = next(iter((await admin.masters()).values()))

        async def topic(i: int) -> None:
            async with limiter:
                config = TopicConfig(
                    topic_name=f"Topic{i:04d}", read_queue_nums=QUEUES, write_queue_nums=QUEUES
                )
                await admin.create_topic(addr, config)

        async def group(i: int) -> None:
            async with limiter:
                await admin.update_sub_group(addr, SubscriptionGroupConfig(group_name=f"G{i:02d}"))

        async with trio.open_nursery() as nursery:
            for i in range(TOPICS):
                nursery.start_soon(topic, i)
            for i in range(GROUPS):
                nursery.start_soon(group, i)
        with trio.fail_after(60):
            while True:
                try:
                    await admin.topic_route("Topic0001")
                    break
                except Exception:
                    await trio.sleep(0.2)
    async with Producer.open(ns, "PG") as producer:
        sent = [await producer.send(Message("Topic0001", b'{"n": 1}', keys="k")) for _ in range(64)]
    done = trio.Event()
    seen = 0

    def listener(msgs) -> ConsumeStatus:
        nonlocal seen
        seen += len(msgs)
        if seen >= 32:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer.open(
        ns, "G00", listener, {"Topic0001": "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, pull_batch_size=4,
    ):  # fmt: skip
        with trio.fail_after(60):
            await done.wait()
    async with Producer.open(ns, "PG") as producer:
        for _ in range(32):
            await producer.send(Message("Topic0001", b"late"))
    return sent[0].offset_msg_id


def fetch_ms(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        response.read()
        assert response.status == 200, (url, response.status)
    return (time.perf_counter() - started) * 1000


def browser_ms(urls: dict[str, str]) -> dict[str, list[float]]:
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    if chromium is None:
        return {}
    out: dict[str, list[float]] = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, args=CHROMIUM_ARGS, headless=True
        )
        page = context.new_page()
        for name, url in urls.items():
            page.goto(url, timeout=120_000)  # warm-up
            out[name] = []
            for _ in range(ROUNDS):
                page.goto(url, timeout=120_000)
                out[name].append(
                    page.evaluate(
                        "() => { const t = performance.getEntriesByType('navigation')[0];"
                        " return t.loadEventEnd - t.requestStart; }"
                    )
                )
        context.close()
    return out


def main() -> None:
    # The store in memory when it can be: the figures are the console's, not the disk's, and
    # a shared disk filling past diskSpaceWarningLevelRatio would refuse the sends.
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="bench-console-", dir=shm if shm.is_dir() else None))
    procs: list[subprocess.Popen] = []
    try:
        conf = root / "namesrv.conf"
        conf.write_text(f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={root}/kv.json\n")
        ns_proc, ns_port = start([sys.executable, "-m", "namesrv", "-c", str(conf)], root / "ns")
        procs.append(ns_proc)
        ns = f"127.0.0.1:{ns_port}"
        base = free_base()
        conf = root / "broker.conf"
        conf.write_text(
            f"brokerName=broker-a\nbrokerIP1=127.0.0.1\nlistenPort={base + 2}\n"
            f"haListenPort={base + 3}\nnamesrvAddr={ns}\nstorePathRootDir={root}/store\n"
            f"mappedFileSizeCommitLog={64 * 1024 * 1024}\nmaxHashSlotNum=50000\n"
            "maxIndexNum=200000\nflushConsumerOffsetInterval=1000\ndiskSpaceWarningLevelRatio=0.99\n"
        )
        broker, _ = start([sys.executable, "-m", "broker", "-c", str(conf)], root / "broker")
        procs.append(broker)
        started = time.perf_counter()
        msg_id = trio.run(populate, ns)
        print(f"{TOPICS} topics x {QUEUES} queues and {GROUPS} groups made in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        console, port = start(
            [sys.executable, "-m", "console", "-n", ns, "--port", "0", "--log-level", "WARNING"],
            root / "console",
        )
        procs.append(console)
        url = f"http://127.0.0.1:{port}"
        pages = {
            "cluster": "/cluster",
            f"topics ({TOPICS}+ rows)": "/topics?kind=all",
            "topic": f"/topic?topic=Topic{TOPICS // 2:04d}",
            f"groups ({GROUPS})": "/groups",
            "group (lag in seconds)": "/group?group=G00",
            "diagnose": "/diagnose?group=G00&topic=Topic0001",
            "messages (last hour)": "/messages?topic=Topic0001",
            "message": f"/message?topic=Topic0001&id={msg_id}",
        }
        print(f"\n{'page':<28} {'HTTP median':>12} {'HTTP max':>10}  (ms, {ROUNDS} rounds)")
        for name, path in pages.items():
            fetch_ms(url + path)
            times = [fetch_ms(url + path) for _ in range(ROUNDS)]
            print(f"{name:<28} {statistics.median(times):>12.1f} {max(times):>10.1f}")
        loads = browser_ms({name: url + path for name, path in pages.items()})
        if loads:
            print(f"\n{'page':<28} {'Chromium median':>16} {'max':>8}  (request to load event)")
            for name, times in loads.items():
                print(f"{name:<28} {statistics.median(times):>16.1f} {max(times):>8.1f}")
        else:
            print("\n(no chromium or playwright: browser load times skipped)")
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(60)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
