"""Our Python client next to the official C++ client (rocketmq==0.4.4), both against our own
NameServer + broker, same workload: 1 KiB messages, sync sends from one thread, then 8
concurrent senders (ours only: the C++ binding's sync send is one call at a time), batches of
32, and consuming everything with a push consumer. Printed, never asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeFromWhere

REPO = Path(__file__).resolve().parents[1]
COUNT = int(os.environ.get("BENCH_CLIENT_MESSAGES", "20000"))
BODY = b"x" * 1024


def start(argv: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    for line in proc.stdout:  # type: ignore[union-attr]
        if line.startswith("READY"):
            return proc, f"127.0.0.1:{line.split('port=')[1].split()[0]}"
    raise RuntimeError(f"{argv} did not start")


def cluster(root: Path) -> tuple[list[subprocess.Popen], str]:
    (root / "ns.conf").write_text(
        f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={root}/kv.json\n"
    )
    ns, ns_addr = start([sys.executable, "-m", "namesrv", "-c", str(root / "ns.conf")])
    (root / "broker.conf").write_text(
        f"brokerName=bench\nbrokerIP1=127.0.0.1\nlistenPort=36911\nnamesrvAddr={ns_addr}\n"
        f"storePathRootDir={root}/store\nmappedFileSizeCommitLog={256 * 1024 * 1024}\n"
    )
    broker, _ = start(
        [sys.executable, "-m", "broker", "-c", str(root / "broker.conf"), "--log-level", "WARNING"]
    )
    return [broker, ns], ns_addr


def report(label: str, count: int, seconds: float) -> float:
    rate = count / seconds
    print(f"{label:<44} {rate:>9,.0f} msg/s  ({count:,} in {seconds:.1f} s)", flush=True)
    return rate


async def ours(ns: str) -> dict[str, float]:
    rates = {}
    async with Producer.open(ns, "BenchPG") as producer:
        await producer.send(Message("PyBench", BODY))
        t0 = time.perf_counter()
        for _ in range(COUNT):
            await producer.send(Message("PyBench", BODY))
        rates["sync"] = report("ours: sync send, 1 sender", COUNT, time.perf_counter() - t0)

        async def sender(n: int) -> None:
            for _ in range(n):
                await producer.send(Message("PyBench8", BODY))

        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(sender, COUNT // 8)
        report("ours: sync send, 8 concurrent senders", COUNT // 8 * 8, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(COUNT // 32):
            await producer.send_batch([Message("PyBatch", BODY) for _ in range(32)])
        report("ours: batch send 32 x 1 KiB", COUNT // 32 * 32, time.perf_counter() - t0)

    got = 0
    done = trio.Event()

    def listener(msgs):
        nonlocal got
        got += len(msgs)
        if got >= COUNT + 1:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    t0 = time.perf_counter()
    async with PushConsumer.open(
        ns,
        "BenchCG",
        listener,
        {"PyBench": "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        await done.wait()
    rates["consume"] = report("ours: push consume", got, time.perf_counter() - t0)
    return rates


def cpp(ns: str) -> dict[str, float]:
    try:
        import rocketmq.client  # noqa: F401
    except (ImportError, OSError) as exc:
        print(f"official C++ client unavailable ({exc}): skipped")
        return {}
    driver = [sys.executable, "-m", "tests.interop.cpp_driver"]
    body_args = ["--count", str(COUNT)]
    t0 = time.perf_counter()
    subprocess.run(
        [*driver, "produce", "--ns", ns, "--topic", "CppBench", *body_args],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    rates = {
        "sync": report("C++: sync send, 1 sender (incl. start-up)", COUNT, time.perf_counter() - t0)
    }
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            *driver,
            "consume",
            "--ns",
            ns,
            "--topic",
            "CppBench",
            "--group",
            "CppBenchG",
            "--expect",
            str(COUNT),
            "--timeout",
            "300",
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    done = [json.loads(line) for line in out.splitlines() if line.startswith('{"done"')]
    got = done[-1]["distinct"] if done else COUNT
    rates["consume"] = report("C++: push consume (incl. start-up)", got, time.perf_counter() - t0)
    return rates


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-client-"))
    procs, ns = cluster(root)
    try:
        mine = trio.run(ours, ns)
        theirs = cpp(ns)
        for key in ("sync", "consume"):
            if key in theirs:
                print(f"ours / C++ ({key}): {mine[key] / theirs[key]:.0%}", flush=True)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(60)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
