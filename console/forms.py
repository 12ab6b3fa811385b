"""The console's input boundary: every value from a URL or a form is checked here, once, and
pages only see the typed results. A bad value is ``BadInput`` naming the field, which the
page turns into a 400 with that one line. Names and numbers follow mqadmin's checks
(client/mqadmin/args.py), so the console refuses exactly what the command line refuses."""

from __future__ import annotations

import argparse
import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import attrs

from client.mqadmin import args as A

T = TypeVar("T")
MAX_FORM_BYTES = 16 * 1024  # the largest form a console page posts is well under 1 KiB
MAX_VALUE_CHARS = 1024
MAX_KEY_CHARS = 255
_MSG_ID = re.compile(r"^[0-9A-Fa-f]{32,64}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
TOPIC_KINDS = ("user", "retry", "dlq", "system", "all")
BODY_VIEWS = ("text", "hex", "json")


class BadInput(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body, one value per field."""
    if len(body) > MAX_FORM_BYTES:
        raise BadInput("form", f"{len(body)} bytes, more than {MAX_FORM_BYTES}")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInput("form", f"not a URL-encoded form: {exc}") from None
    return dict(pairs)


class Values:
    """Checked reads of a query string or form."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = raw

    def get(self, name: str, parse: Callable[[str], T], default: Any = None) -> T:
        text = self.raw.get(name, "")
        if not text.strip():
            if default is None:
                raise BadInput(name, "required")
            return default
        if len(text) > MAX_VALUE_CHARS:
            raise BadInput(name, f"{len(text)} characters, more than {MAX_VALUE_CHARS}")
        try:
            return parse(text)
        except argparse.ArgumentTypeError as exc:
            raise BadInput(name, str(exc)) from None

    def optional(self, name: str, parse: Callable[[str], T]) -> T | None:
        return self.get(name, parse, default=_NONE) if self.raw.get(name, "").strip() else None

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        value = self.raw.get(name, "") or choices[0]
        if value not in choices:
            raise BadInput(name, f"{value[:40]!r} is not one of {', '.join(choices)}")
        return value


_NONE = object()


# ---------------------------------------------------------------------- single values


def _bad(text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(text)


def message_id(text: str) -> str:
    """A msgId (UNIQ_KEY) or an offsetMsgId: hex, 32 to 64 characters."""
    text = text.strip()
    if not _MSG_ID.match(text):
        raise _bad(f"{text[:80]!r} is not a message id (32 to 64 hex characters)")
    return text.upper()


def message_key(text: str) -> str:
    text = text.strip()
    if len(text) > MAX_KEY_CHARS or _CONTROL.search(text):
        raise _bad(f"a key is at most {MAX_KEY_CHARS} printable characters")
    return text


def moment(text: str) -> int:
    """ms since the epoch, or a browser's datetime-local value (this host's local time), or
    what mqadmin takes (``now``, ``yyyy-MM-dd#HH:mm:ss:SSS``)."""
    text = text.strip()
    for layout in ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
        try:
            return int(datetime.datetime.strptime(text, layout).timestamp() * 1000)
        except ValueError:
            continue
    try:
        return A.timestamp(text)
    except argparse.ArgumentTypeError:
        raise _bad(f"{text[:40]!r} is not a time (yyyy-mm-ddThh:mm, ms or 'now')") from None


def cluster_name(text: str) -> str:
    text = text.strip()
    if len(text) > MAX_KEY_CHARS or _CONTROL.search(text):
        raise _bad("a cluster name is at most 255 printable characters")
    return text


def checkbox(text: str) -> bool:
    return text.strip().lower() in ("on", "true", "1")


# ---------------------------------------------------------------------- forms


@attrs.frozen
class TopicChange:
    cluster: str
    topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    order: bool

    @classmethod
    def read(cls, v: Values) -> TopicChange:
        return cls(
            cluster=v.get("cluster", cluster_name),
            topic=v.get("topic", A.topic),
            read_queue_nums=v.get("readQueueNums", A.queue_nums, 8),
            write_queue_nums=v.get("writeQueueNums", A.queue_nums, 8),
            perm=v.get("perm", A.perm, 6),
            order=v.get("order", checkbox, False),
        )


def confirmed(v: Values, expected: str, what: str) -> None:
    """A change that cannot be undone needs the name typed again."""
    if v.raw.get("confirm", "").strip() != expected:
        raise BadInput("confirm", f"type the {what}'s name ({expected}) to confirm")


@attrs.frozen
class TopicDelete:
    cluster: str
    topic: str

    @classmethod
    def read(cls, v: Values) -> TopicDelete:
        form = cls(cluster=v.get("cluster", cluster_name), topic=v.get("topic", A.topic))
        confirmed(v, form.topic, "topic")
        return form


@attrs.frozen
class OffsetReset:
    group: str
    topic: str
    timestamp_ms: int

    @classmethod
    def read(cls, v: Values) -> OffsetReset:
        form = cls(
            group=v.get("group", A.group),
            topic=v.get("topic", A.topic),
            timestamp_ms=v.get("timestamp", moment),
        )
        confirmed(v, form.group, "group")
        return form


@attrs.frozen
class DeadLetterResend:
    group: str
    msg_id: str  # the dead letter's offsetMsgId

    @classmethod
    def read(cls, v: Values) -> DeadLetterResend:
        return cls(group=v.get("group", A.group), msg_id=v.get("msgId", A.offset_msg_id))


@attrs.frozen
class MessageQuery:
    """One of: topic + time range, topic + key, topic + message id."""

    topic: str
    begin_ms: int | None = None
    end_ms: int | None = None
    key: str | None = None
    msg_id: str | None = None

    @classmethod
    def read(cls, v: Values, now_ms: int) -> MessageQuery | None:
        """None when nothing was asked yet (the empty form)."""
        if not v.raw.get("topic", "").strip():
            return None
        topic = v.get("topic", A.topic)
        msg_id = v.optional("msgId", message_id)
        key = v.optional("key", message_key)
        if msg_id or key:
            return cls(topic=topic, key=key, msg_id=msg_id)
        end = v.get("end", moment, now_ms)
        begin = v.get("begin", moment, end - 3_600_000)
        if begin > end:
            raise BadInput("begin", "the range starts after it ends")
        return cls(topic=topic, begin_ms=begin, end_ms=end)
