"""``logFile`` on real ``mqbroker`` and ``mqnamesrv`` processes: every record lands in the file,
which rotates past ``logFileMaxBytes`` keeping ``logFileBackups`` old files; stderr then gets
warnings and errors only. A log file on a full disk costs records, never the process, and is
told in one line each way."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.harness import ProcessPool, ServerProcess, python_module
from tests.integration.brokerkit import broker_conf, call
from tests.integration.hakit import wait_until
from tests.mountkit import fill, free, tmpfs

MAX_BYTES = 4096
BACKUPS = 2


def start(processes: ProcessPool, tmp_path: Path, kind: str, log_file: Path) -> ServerProcess:
    keys = {"logFile": log_file, "logFileMaxBytes": MAX_BYTES, "logFileBackups": BACKUPS}
    if kind == "broker":
        conf = broker_conf(tmp_path, namesrvAddr="", **keys)
    else:
        conf = tmp_path / "namesrv.conf"
        lines = {
            "listenPort": 0,
            "listenHost": "127.0.0.1",
            "kvConfigPath": tmp_path / "kv" / "kvConfig.json",
            **keys,
        }
        conf.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return processes.start(kind, python_module(kind, "-c", str(conf)))


def logged_request(kind: str, n: int) -> RemotingCommand:
    """A request the server answers after logging a line or two at INFO."""
    if kind == "broker":
        return RemotingCommand.request(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, {})
    body = f"orderMessageEnable={'true' if n % 2 else 'false'}\n".encode()
    return RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, body)


async def make_lines(client: RemotingClient, kind: str, addr: str, count: int) -> None:
    for n in range(count):
        assert (await call(client, addr, logged_request(kind, n))).code == 0


def rotated(log_file: Path) -> list[Path]:
    return sorted(log_file.parent.glob(log_file.name + ".*"))


@pytest.mark.parametrize("kind", ["broker", "namesrv"])
async def test_the_log_file_rotates_and_keeps_its_count(processes, tmp_path, kind) -> None:
    log_file = tmp_path / "var-log" / f"{kind}.log"  # not logs/: the console goes there
    server = start(processes, tmp_path, kind, log_file)
    async with RemotingClient.open() as client:

        async def rotated_twice() -> bool:
            await make_lines(client, kind, server.addr, 10)
            return len(rotated(log_file)) == BACKUPS

        await wait_until(rotated_twice, 60, f"{log_file} to rotate {BACKUPS} times")
        # four files' worth more: without the kept count there would be .3, .4, ...
        await make_lines(client, kind, server.addr, 4 * MAX_BYTES // 80)
    assert server.terminate() == 0
    names = [p.name for p in rotated(log_file)]
    assert names == [f"{kind}.log.1", f"{kind}.log.2"]
    for path in (log_file, *rotated(log_file)):
        assert 0 < path.stat().st_size <= MAX_BYTES, path
    kept = "".join(p.read_text() for p in (log_file, *rotated(log_file)))
    assert "serving on" not in kept  # the start's lines rotated out long ago
    assert "signal SIGTERM: shutting down" in log_file.read_text()
    console = server.log_path.read_text()  # stdout and stderr: warnings and errors only
    assert "READY" in console and " INFO " not in console.split("READY")[1]


async def test_a_full_disk_under_the_log_costs_records_not_the_process(processes, tmp_path) -> None:
    with tmpfs(tmp_path / "var-log", size_kib=64) as logs:
        server = start(processes, tmp_path, "namesrv", logs / "namesrv.log")
        fill(logs)
        async with RemotingClient.open() as client:

            async def told(needle: str) -> bool:
                await make_lines(client, "namesrv", server.addr, 2)
                return needle in server.log_path.read_text()

            await wait_until(partial(told, "cannot write the log file"), 30, "the failure told")
            free(logs)
            await wait_until(partial(told, "written again"), 30, "the log file written again")
        assert server.terminate() == 0
    console = server.log_path.read_text()
    assert console.count("cannot write the log file") == 1, console
    assert "Traceback" not in console and "Logging error" not in console
