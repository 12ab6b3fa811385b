"""A real NameServer, broker and mqconsole for the console's tests, and plain HTTP to it
(the standard library's client: what a script or a health check would use)."""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import attrs

from tests.harness import ProcessPool, ServerProcess, python_module
from tests.integration.brokerkit import broker_conf, start_broker, start_namesrv

FAST_LEVELS = " ".join(["1s"] * 18)  # retries (and so dead letters) within seconds
_TOKEN = re.compile(r'name="csrf" value="([^"]+)"')
_ERROR = re.compile(r'<p class="problem" id="error">([^<]*)</p>')


@attrs.frozen
class Cluster:
    namesrv: ServerProcess
    broker: ServerProcess
    pool: ProcessPool
    tmp: Path


def start_cluster(pool: ProcessPool, tmp: Path, **broker_overrides: object) -> Cluster:
    ns = start_namesrv(pool, tmp, **broker_overrides.pop("namesrv", {}))  # type: ignore[arg-type]
    conf = broker_conf(tmp, namesrvAddr=ns.addr, messageDelayLevel=FAST_LEVELS, **broker_overrides)
    return Cluster(ns, start_broker(pool, conf), pool, tmp)


def start_console(
    pool: ProcessPool, namesrv: str, *flags: str, name: str = "console", env=None
) -> ServerProcess:
    argv = python_module("console", "-n", namesrv, "--port", "0", *flags)
    return pool.start(name, argv, env=env)


@attrs.frozen
class Page:
    status: int
    text: str
    location: str | None = None

    @property
    def error(self) -> str | None:
        match = _ERROR.search(self.text)
        return html.unescape(match.group(1)) if match else None

    @property
    def token(self) -> str:
        match = _TOKEN.search(self.text)
        assert match, "no form token on the page"
        return match.group(1)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a 303 is the answer we check
        return None


_OPENER = urllib.request.build_opener(NoRedirect)


def fetch(port: int, path: str, form: dict[str, str] | None = None) -> Page:
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data)
    try:
        with _OPENER.open(request, timeout=60) as response:
            return Page(response.status, response.read().decode())
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        return Page(exc.code, text, exc.headers.get("Location"))
