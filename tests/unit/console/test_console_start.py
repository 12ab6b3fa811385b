"""mqconsole's start-up ends in READY or in one line on stderr with an exit status, as
mqbroker's (console/__main__.py): never a traceback, whatever stopped it."""

from __future__ import annotations

import errno

import pytest

from client.errors import MQClientError
from console import __main__ as console_main


def start_failing_with(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    async def serve(*_: object) -> None:
        raise exc

    monkeypatch.setattr(console_main, "serve", serve)


@pytest.mark.parametrize(
    ("exc", "status", "line"),
    [
        (RuntimeError("template missing"), 1, "unexpected RuntimeError: template missing"),
        (
            ExceptionGroup("nursery", [KeyError("x")]),
            1,
            "unexpected KeyError",
        ),
        (OSError(errno.EADDRINUSE, "Address already in use"), 3, "cannot start: [Errno 98]"),
        (MQClientError("tools.yml: not UTF-8 text"), 2, "tools.yml: not UTF-8 text"),
    ],
)
def test_whatever_stops_start_up_is_one_line_and_a_status(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exc: BaseException,
    status: int,
    line: str,
) -> None:
    monkeypatch.delenv("ROCKETMQ_TRIO_TRACEBACK", raising=False)
    start_failing_with(monkeypatch, exc)
    assert console_main.main(["-n", "127.0.0.1:9876", "--port", "0"]) == status
    err = capsys.readouterr().err
    assert err.startswith("mqconsole: ") and line in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_no_nameserver_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert console_main.main([]) == 2
    assert capsys.readouterr().err.startswith("mqconsole: no NameServer")
