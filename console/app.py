"""The console's web application: Starlette routes (on Hypercorn's Trio worker, see
console/__main__.py), server-rendered pages, and the one error boundary every page passes.

Each page is ``async def page(console, request) -> Response``. The boundary turns what can go
wrong into a page with one line, never a traceback: bad input (console/forms.py) is a 400,
the cluster refusing or not answering is a 502, a change asked of a read-only console or a
form without this process's token is a 403, and our own bug is a 500 that is also logged.
"""

from __future__ import annotations

import datetime
import logging
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import jinja2
import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from client.admin import AdminClient
from client.errors import MQClientError, sole_exception
from console.forms import MAX_FORM_BYTES, BadInput, Values, parse_form
from console.history import History
from remoting.errors import RemotingError, RemotingTimeoutError

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
PAGE_TIMEOUT_S = 60.0  # a page that waits longer on the cluster says so instead
CLUSTER_ERRORS = (MQClientError, RemotingError, OSError)


class Refused(Exception):
    """A change this console will not make (read-only, or a form it did not serve)."""


@attrs.define
class Console:
    admin: AdminClient
    history: History
    namesrv: str
    read_only: bool = False
    account: str | None = None  # the access key requests are signed with
    sample_interval_s: float = 10.0
    csrf_token: str = attrs.Factory(lambda: secrets.token_urlsafe(24))


Page = Callable[[Console, Request], Awaitable[Response]]


def _time(ms: int | None) -> str:
    if not ms or ms <= 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    if value < 60:
        return f"{value:.1f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["time"] = _time
    env.filters["seconds"] = _seconds
    return env


ENV = environment()


def render(
    console: Console, request: Request, template: str, status_code: int = 200, **context: Any
) -> HTMLResponse:
    html = ENV.get_template(template).render(
        console=console, path=request.url.path, params=request.query_params, **context
    )
    return HTMLResponse(html, status_code=status_code)


def error_page(console: Console, request: Request, status: int, message: str) -> HTMLResponse:
    return render(console, request, "error.html", status, status=status, message=message)


async def form_values(console: Console, request: Request) -> Values:
    """A change's form, after the read-only and token checks every change passes."""
    if console.read_only:
        raise Refused("this console is read-only (mqconsole --read-only): nothing was changed")
    values = Values(parse_form(await _body(request)))
    if not secrets.compare_digest(values.raw.get("csrf", ""), console.csrf_token):
        raise Refused("the form did not come from this console (reload the page and try again)")
    return values


async def _body(request: Request) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            raise BadInput("form", f"more than {MAX_FORM_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _cluster_failure(exc: BaseException) -> str:
    if isinstance(exc, RemotingTimeoutError):
        return f"{exc}: the server is up but did not answer in time"
    return f"the cluster refused or did not answer: {exc}"


def guarded(console: Console, page: Page) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            with trio.fail_after(PAGE_TIMEOUT_S):
                return await page(console, request)
        except BadInput as exc:
            return error_page(console, request, 400, str(exc))
        except Refused as exc:
            return error_page(console, request, 403, str(exc))
        except trio.TooSlowError:
            return error_page(
                console, request, 504, f"the cluster did not answer within {PAGE_TIMEOUT_S:g} s"
            )
        except CLUSTER_ERRORS as exc:
            return error_page(console, request, 502, _cluster_failure(exc))
        except ExceptionGroup as group:  # from the client's nurseries (never Cancelled)
            failure = sole_exception(group)
            if isinstance(failure, CLUSTER_ERRORS):
                return error_page(console, request, 502, _cluster_failure(failure))
            log.exception("page %s failed", request.url.path)
            return error_page(console, request, 500, f"unexpected error (a bug): {group!r}")
        except Exception as exc:
            log.exception("page %s failed", request.url.path)
            return error_page(console, request, 500, f"unexpected error (a bug): {exc!r}")

    return endpoint


def build_app(console: Console) -> Starlette:
    from console.pages import cluster, groups, messages, topics

    def route(path: str, page: Page, methods: tuple[str, ...] = ("GET",)) -> Route:
        return Route(path, guarded(console, page), methods=list(methods))

    async def home(request: Request) -> Response:
        return RedirectResponse("/cluster", status_code=303)

    routes = [
        Route("/", home),
        route("/cluster", cluster.cluster_page),
        route("/topics", topics.topics_page),
        route("/topics/change", topics.change_topic, ("POST",)),
        route("/topic", topics.topic_page),
        route("/topic/delete", topics.delete_topic, ("POST",)),
        route("/groups", groups.groups_page),
        route("/group", groups.group_page),
        route("/group/reset-offset", groups.reset_offset, ("POST",)),
        route("/diagnose", groups.diagnose_page),
        route("/messages", messages.messages_page),
        route("/message", messages.message_page),
        route("/message/body", messages.message_body),
        route("/message/resend", messages.resend_dead_letter, ("POST",)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes)
