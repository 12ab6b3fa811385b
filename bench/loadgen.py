"""A minimal load generator: one OS process per connection, blocking sockets, frames encoded
once up front, so the generator's per-request cost is a send and a receive. Used by the broker
and NameServer benchmarks; it reports requests, elapsed time and per-request latencies.

Fixed frames go through the C worker (bench/loadgen.c, built here with the C compiler `make`
needs anyway): on a 2-vCPU machine the Python worker's own per-request work took CPU from the
server it measured. Without a compiler, or with BENCH_PYTHON_LOADGEN=1, and for runs whose next
frame depends on the last response (consume), the Python worker runs."""

from __future__ import annotations

import atexit
import functools
import multiprocessing as mp
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import time
from array import array
from collections.abc import Callable
from pathlib import Path

import attrs

_LEN = struct.Struct(">i")


@attrs.frozen
class WorkerResult:
    requests: int
    elapsed_s: float
    latencies_us: list[int]
    errors: int
    payload_bytes: int  # response bodies received (the consume benchmark counts records in it)
    records: int


def _recv_exact(sock: socket.socket, n: int, buf: bytearray) -> memoryview:
    if len(buf) < n:
        buf.extend(bytes(n - len(buf)))
    view = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("server closed the connection")
        got += k
    return view


def read_frame(sock: socket.socket, buf: bytearray) -> tuple[int, memoryview]:
    """(response code, body) of one response frame."""
    (length,) = _LEN.unpack(_recv_exact(sock, 4, buf))
    frame = _recv_exact(sock, length, buf)
    (header_word,) = _LEN.unpack_from(frame, 0)
    header_length = header_word & 0xFFFFFF
    header = bytes(frame[4 : 4 + header_length])
    at = header.find(b'"code":')
    code = int(header[at + 7 : header.find(b",", at)]) if at >= 0 else -1
    return code, frame[4 + header_length :]


def count_records(body: memoryview) -> int:
    """Records in a pull body, walking their TOTALSIZE fields (what a real consumer does first)."""
    n = pos = 0
    while pos + 4 <= len(body):
        (size,) = _LEN.unpack_from(body, pos)
        pos += size
        n += 1
    return n


def _worker(
    addr: tuple[str, int],
    frames: list[bytes],
    duration_s: float,
    max_requests: int,
    next_frame: Callable[[int, memoryview], bytes | None] | None,
    out: mp.Queue,
    tls: bool = False,
) -> None:
    sock = socket.create_connection(addr)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:  # the server's certificate is not checked: a benchmark's throwaway one
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    buf = bytearray(1 << 20)
    latencies, errors, payload, records, i = [], 0, 0, 0, 0
    started = time.perf_counter()
    deadline = started + duration_s
    frame = frames[0]
    while i < max_requests:
        t0 = time.perf_counter_ns()
        sock.sendall(frame)
        code, body = read_frame(sock, buf)
        latencies.append((time.perf_counter_ns() - t0) // 1000)
        if code != 0:
            errors += 1
        payload += len(body)
        if next_frame is not None:
            records += count_records(body) if code == 0 else 0
            frame = next_frame(code, body)
            if frame is None:
                break
        else:
            frame = frames[(i + 1) % len(frames)]
        i += 1
        if (i & 63) == 0 and time.perf_counter() > deadline:
            break
    out.put(WorkerResult(i, time.perf_counter() - started, latencies, errors, payload, records))
    sock.close()


def run(
    addr: tuple[str, int],
    frames_per_worker: list[list[bytes]],
    *,
    duration_s: float = 5.0,
    max_requests: int = 10**9,
    next_frame: Callable[[int, memoryview], bytes | None] | None = None,
    tls: bool = False,
    python: bool = False,
    window: int = 1,
) -> list[WorkerResult]:
    """``tls``: connect with TLS (the Python worker); ``python``: the Python worker even for
    fixed frames (to compare with TLS runs, which it must serve); ``window``: requests in
    flight per connection (the C worker only)."""
    worker = _native_worker()
    if next_frame is None and worker is not None and not (tls or python):
        return _run_native(worker, addr, frames_per_worker, duration_s, max_requests, window)
    if window != 1:
        raise RuntimeError("requests in flight need the C load generator (a C compiler)")
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(addr, f, duration_s, max_requests, next_frame, out, tls))
        for f in frames_per_worker
    ]
    for w in workers:
        w.start()
    results = [out.get() for _ in workers]
    for w in workers:
        w.join()
    return results


@functools.cache
def _native_worker() -> str | None:
    if os.environ.get("BENCH_PYTHON_LOADGEN") == "1":
        return None
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        print("load generator: no C compiler, the Python worker runs", flush=True)
        return None
    folder = Path(tempfile.mkdtemp(prefix="loadgen-"))
    atexit.register(shutil.rmtree, folder, True)
    binary = folder / "loadgen"
    source = Path(__file__).with_name("loadgen.c")
    built = subprocess.run(
        [cc, "-O2", "-o", str(binary), str(source)], capture_output=True, text=True
    )
    if built.returncode != 0:
        print(f"load generator: {source} did not build, the Python worker runs:\n{built.stderr}")
        return None
    return str(binary)


def _run_native(
    binary: str,
    addr: tuple[str, int],
    frames_per_worker: list[list[bytes]],
    duration_s: float,
    max_requests: int,
    window: int = 1,
) -> list[WorkerResult]:
    folder = Path(tempfile.mkdtemp(prefix="loadgen-run-"))
    try:
        procs = []
        for i, frames in enumerate(frames_per_worker):
            (folder / f"frames{i}").write_bytes(b"".join(frames))
            argv = [binary, addr[0], str(addr[1]), str(duration_s), str(max_requests)]
            argv += [str(folder / f"frames{i}"), str(folder / f"out{i}"), str(window)]
            procs.append(subprocess.Popen(argv))
        results = []
        for i, proc in enumerate(procs):
            if proc.wait() != 0:
                raise RuntimeError(f"load generator worker {i} failed (exit {proc.returncode})")
            data = (folder / f"out{i}").read_bytes()
            requests, errors, payload, elapsed_ns, count = struct.unpack_from("<5Q", data)
            latencies = array("I", data[40 : 40 + 4 * count]).tolist()
            results.append(WorkerResult(requests, elapsed_ns / 1e9, latencies, errors, payload, 0))
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def percentile(values: list[int], p: float) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]
