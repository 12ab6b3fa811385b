"""Message trace records (pure): the text Java's trace hooks put in RMQ_SYS_TRACE_TOPIC messages
(TraceDataEncoder) and what ``mqadmin queryMsgTraceById`` reads back (TraceView).

A trace message's body holds records separated by FIELD_SPLITOR (0x02), each a list of fields
separated by CONTENT_SPLITOR (0x01) whose first field is the record type: ``Pub`` (a send),
``SubBefore`` / ``SubAfter`` (a consume), ``EndTransaction``. Its keys are the traced msgId and
the message's own keys, so a query by key finds every record of a message.
"""

from __future__ import annotations

from typing import Any

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
DEFAULT_REGION = "DefaultRegion"


def _text(value: object) -> str:
    return "null" if value is None else str(value)  # Java's StringBuilder.append(null)


def encode_pub(
    *,
    timestamp: int,
    region: str,
    group: str,
    topic: str,
    msg_id: str,
    tags: str | None,
    keys: str | None,
    store_host: str,
    body_length: int,
    cost_ms: int,
    offset_msg_id: str,
    success: bool,
    msg_type: int = 0,  # MessageType.Normal_Msg
) -> str:
    fields = [
        "Pub",
        timestamp,
        region,
        group,
        topic,
        msg_id,
        tags,
        keys,
        store_host,
        body_length,
        cost_ms,
        msg_type,
        offset_msg_id,
        "true" if success else "false",
    ]
    return CONTENT_SPLITOR.join(_text(f) for f in fields) + FIELD_SPLITOR


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _pub(line: list[str]) -> dict[str, Any] | None:
    if len(line) < 12:
        return None
    view = {
        "type": "Pub",
        "timestamp": _int(line[1]),
        "group": line[3],
        "topic": line[4],
        "msgId": line[5],
        "tags": line[6],
        "keys": line[7],
        "storeHost": line[8],
        "costTime": _int(line[10]),
        "offsetMsgId": "",
        "success": False,
    }
    if len(line) == 13:
        view["success"] = line[12] == "true"
    elif len(line) >= 14:
        view["offsetMsgId"], view["success"] = line[12], line[13] == "true"
    return view


def _sub_after(line: list[str]) -> dict[str, Any] | None:
    if len(line) < 6:
        return None
    view = {
        "type": "SubAfter",
        "requestId": line[1],
        "msgId": line[2],
        "costTime": _int(line[3]),
        "success": line[4] == "true",
        "keys": line[5],
        "timestamp": 0,
        "group": "",
    }
    if len(line) >= 9:
        view["timestamp"], view["group"] = _int(line[7]), line[8]
    return view


def _sub_before(line: list[str]) -> dict[str, Any] | None:
    if len(line) < 8:
        return None
    return {
        "type": "SubBefore",
        "timestamp": _int(line[1]),
        "group": line[3],
        "requestId": line[4],
        "msgId": line[5],
        "retryTimes": _int(line[6]),
        "keys": line[7],
        "costTime": 0,
        "success": True,
    }


DECODERS = {"Pub": _pub, "SubAfter": _sub_after, "SubBefore": _sub_before}


def decode(body: str, msg_id: str, client_host: str = "") -> list[dict[str, Any]]:
    """The records of one trace message about ``msg_id`` (TraceView.decodeFromTraceTransData);
    records of other messages, of unknown types or cut short are skipped."""
    views = []
    for record in body.split(FIELD_SPLITOR):
        line = record.split(CONTENT_SPLITOR)
        decoder = DECODERS.get(line[0])
        view = decoder(line) if decoder else None
        if view is None or view["msgId"] != msg_id:
            continue
        view["clientHost"] = client_host  # the trace message's born host, as Java shows it
        view["status"] = "success" if view["success"] else "failed"
        views.append(view)
    return views
