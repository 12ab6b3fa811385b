"""One pass for a plain SEND_BATCH_MESSAGE (issue 27): the header's values from the native
decoder, the checks, the store's plan, append and packed dispatch (broker/store/batch_put.py)
and the reply frame, without the frozen header, MessageExtBrokerInner, PutMessageResult or
the response command and its extFields per request.

"Plain" is the form RocketMQ clients send for ``producer.send(list)``: a V2 JSON header with
batch=true that the native scan (remoting/native/codec/send_scan.c) or decoder takes, a topic
already in the table, writable, neither forbidden nor a retry topic (which a batch may not
name), a queue id the topic has, no transaction type in sysFlag, no DELAY, timer or TRAN_MSG
property in the header; on a broker that answers before durability and takes writes
(``send_plain.broker_takes_plain``). Anything
else, and any batch the store passes on (a refusal, a segment to roll), returns None before
anything is stored, and ``SendMessageProcessor`` answers it through the reference (every
request in pure mode, where the native decoder is absent). tests/unit/broker/
test_send_batch_plain.py holds both to the same reply bytes, CommitLog, ConsumeQueue and
IndexFile bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.processor.send_plain import (
    _SPECIAL,
    _decode,
    _queue_bound,
    _to_properties,
    born_host,
    broker_takes_plain,
)
from broker.processor.send_reply import stored_reply_frame
from broker.store.batch_put import put_plain_batch
from remoting.codes import RequestCode, SerializeType
from remoting.command import EncodedReply
from remoting.message import TRANSACTION_ROLLBACK_TYPE, MessageConst, properties_to_string
from remoting.names import valid_topics

if TYPE_CHECKING:
    from broker.processor.send import SendMessageProcessor
    from remoting.command import RemotingCommand
    from remoting.connection import Connection, HandlerResult

_BATCH = int(RequestCode.SEND_BATCH_MESSAGE)
_JSON = int(SerializeType.JSON)
_CLUSTER = MessageConst.CLUSTER


def plain_batch(
    processor: SendMessageProcessor, connection: Connection, request: RemotingCommand
) -> bytes | None:
    """The reply frame of a plain batch, stored; None (nothing stored) for the reference."""
    if (
        request.code != _BATCH
        or request.serialize_type != _JSON
        or not broker_takes_plain(processor)
    ):
        return None
    # The header's values as the C scan read them from its bytes (remoting/command.py
    # ScannedCommand) when its topics are known valid; else decoded from the extFields dict (a
    # header the scan left to the orjson path, a topic not seen yet: the decoder checks it)
    values = request.header_values
    if values is None or values[1] not in valid_topics or values[2] not in valid_topics:
        fields = request.ext_fields
        if type(fields) is not dict:
            return None
        values = _decode(fields, True, valid_topics)  # type: ignore[misc]
        if values is None:
            return None
    (_, topic, _, _, queue_id, sys_flag, born_ts, _, text, reconsume, _, batch, *_) = values
    broker = processor.broker
    if (
        not batch
        or sys_flag & TRANSACTION_ROLLBACK_TYPE
        or not 0 <= queue_id < _queue_bound(broker.topics.table.get(topic), topic)
    ):
        return None
    encoded = _encoded.get((text, broker.config.broker_cluster_name))
    if encoded is None:
        encoded = kept_property_bytes(text, broker.config.broker_cluster_name)
    if encoded is _REFUSED:
        return None
    stored = put_plain_batch(
        broker.store, topic, queue_id, sys_flag, encoded, request.body, born_ts,
        born_host(connection), reconsume or 0,
    )  # fmt: skip
    if stored is None:
        return None
    msg_id, queue_offset, count, size = stored
    broker.stats.on_put(topic, broker.config.broker_cluster_name, count, size)
    return stored_reply_frame(request.opaque, msg_id, queue_id, queue_offset)


# A batch's own properties are the same string request after request (a producer's WAIT):
# their record bytes are kept by (text, cluster), a few short ones, so a batch costs a lookup
# instead of a dict, a join and an encode. Bounded: at most _ENCODED_MAX strings of at most
# _ENCODED_TEXT_MAX characters, forgotten all at once when full.
_ENCODED_MAX = 64
_ENCODED_TEXT_MAX = 512
_REFUSED = b"\x00refused"  # a special property: never a record's bytes (no \x00 in a name)
_encoded: dict[tuple[str | None, str], bytes] = {}


def batch_property_bytes(text: str | None, cluster: str) -> bytes:
    """The bytes every entry of a batch carries after its own properties: the header's
    properties parsed as the reference parses them, with CLUSTER set (WAIT kept: a batch keeps
    it), encoded; ``_REFUSED`` when one asks for more than an append (``_SPECIAL``)."""
    properties = _to_properties(text)  # type: ignore[misc]
    if not _SPECIAL.isdisjoint(properties):
        return _REFUSED
    properties[_CLUSTER] = cluster
    return properties_to_string(properties).encode()


def kept_property_bytes(text: str | None, cluster: str) -> bytes:
    """``batch_property_bytes``, kept for the next batch when short (``_encoded``)."""
    encoded = batch_property_bytes(text, cluster)
    if len(_encoded) >= _ENCODED_MAX:
        _encoded.clear()
    if text is None or len(text) <= _ENCODED_TEXT_MAX:
        _encoded[text, cluster] = encoded
    return encoded


def plain_batch_reply(
    processor: SendMessageProcessor, connection: Connection, request: RemotingCommand
) -> EncodedReply | None:
    """``plain_batch`` as a lone request's answer (the connection sends an EncodedReply as it
    is)."""
    frame = plain_batch(processor, connection, request)
    return None if frame is None else EncodedReply(0, [frame])


def plain_batches(
    processor: SendMessageProcessor,
    connection: Connection,
    requests: list[RemotingCommand],
    connections: list[Connection] | None = None,
) -> list[HandlerResult | bytes | Exception]:
    """A read of batches only (pipelined), or a selector round's (``connections[i]`` sent
    ``requests[i]``): each plain one in its own pass, the others through the reference, in
    order; a failure is its own request's answer, as in reference_group."""
    results: list[HandlerResult | bytes | Exception] = []
    for index, request in enumerate(requests):
        if connections is not None:
            connection = connections[index]
        try:
            frame = plain_batch(processor, connection, request)
        except Exception as exc:
            results.append(exc)
            continue
        if frame is None:
            frame = processor.reference_group(connection, [request])[0]
        results.append(frame)
    return results
