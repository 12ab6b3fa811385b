"""The message pages: a topic's messages by time range, by key or by id; one message with its
properties and body (text, hex, JSON, or the raw bytes as a download); and the resend of a
dead letter to its group.

An offsetMsgId names a broker address. The console only ever asks an address its
NameServers list as a broker of the cluster (``known_broker``): an id typed into a page
does not get to point the console at any other host."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from client.errors import MQClientError
from client.mqadmin import args as A
from console.app import Console, form_values, render
from console.bodyview import body_views
from console.forms import BODY_VIEWS, BadInput, DeadLetterResend, MessageQuery, Values, message_id
from console.sampler import now_ms
from remoting import constants as K
from remoting import message as codec
from remoting.message import MessageExt


async def known_broker(console: Console, addr: str) -> bool:
    info = await console.admin.cluster_info()
    return any(addr in data.broker_addrs.values() for data in info.broker_addr_table.values())


async def by_offset_id(console: Console, msg_id: str) -> MessageExt | None:
    """The message an offsetMsgId names, when it names a broker of this cluster."""
    try:
        stored = codec.decode_offset_msg_id(msg_id)
    except ValueError:
        return None
    if not await known_broker(console, stored.addr):
        return None
    msg = await console.admin.view_message(msg_id)
    return msg if msg.offset_msg_id.upper() == msg_id.upper() else None


async def find_messages(console: Console, topic: str, msg_id: str) -> list[MessageExt]:
    """By offsetMsgId, else by msgId (UNIQ_KEY) through the topic's index (every copy)."""
    found = await by_offset_id(console, msg_id)
    if found is not None:
        return [found]
    copies = await console.admin.query_by_unique_key(topic, msg_id)
    return sorted(copies, key=lambda m: m.store_timestamp)


async def messages_page(console: Console, request: Request) -> Response:
    query = MessageQuery.read(Values(request.query_params), now_ms())
    found: list[MessageExt] = []
    more = False
    if query is not None:
        if query.msg_id:
            found = await find_messages(console, query.topic, query.msg_id)
        elif query.key:
            found = await console.admin.query_by_key(query.topic, query.key)
        else:
            assert query.begin_ms is not None and query.end_ms is not None
            found, more = await console.admin.messages_by_time(
                query.topic, query.begin_ms, query.end_ms
            )
    return render(console, request, "messages.html", found=found, more=more, searched=query)


async def _one(console: Console, request: Request) -> tuple[str, MessageExt]:
    values = Values(request.query_params)
    topic, msg_id = values.get("topic", A.topic), values.get("id", message_id)
    found = await find_messages(console, topic, msg_id)
    if not found:
        raise MQClientError(f"no message with id {msg_id} in {topic}")
    return topic, found[0]


async def message_page(console: Console, request: Request) -> Response:
    view = Values(request.query_params).choice("view", BODY_VIEWS)
    topic, msg = await _one(console, request)
    dead_group = (
        msg.topic[len(K.DLQ_GROUP_TOPIC_PREFIX) :]
        if msg.topic.startswith(K.DLQ_GROUP_TOPIC_PREFIX)
        else None
    )
    return render(
        console,
        request,
        "message.html",
        topic=topic,
        msg=msg,
        view=view,
        views=BODY_VIEWS,
        body=body_views(msg.body),
        properties=sorted(msg.properties.items()),
        dead_group=dead_group,
    )


async def message_body(console: Console, request: Request) -> Response:
    _, msg = await _one(console, request)
    name = f"{msg.msg_id or msg.offset_msg_id}.bin"
    return Response(
        msg.body,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def resend_dead_letter(console: Console, request: Request) -> Response:
    form = DeadLetterResend.read(await form_values(console, request))
    msg = await by_offset_id(console, form.msg_id)
    if msg is None:
        raise BadInput("msgId", f"no message {form.msg_id} on a broker of this cluster")
    if msg.topic != K.dlq_topic(form.group):
        raise BadInput("msgId", f"{form.msg_id} is in {msg.topic}, not {K.dlq_topic(form.group)}")
    result = await console.admin.resend_dead_letter(msg, form.group)
    done = quote(f"resent to {K.retry_topic(form.group)} as {result.msg_id}")
    target = quote(K.retry_topic(form.group))
    return RedirectResponse(
        f"/message?topic={target}&id={result.offset_msg_id}&done={done}", status_code=303
    )
