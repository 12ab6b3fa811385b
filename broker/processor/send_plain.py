"""One pass for a read's run of plain single sends (issue 27): header values, checks, append,
dispatch and the reply frames, without the objects the reference builds per request (the
frozen header, MessageExtBrokerInner, AppendMessageResult, PutMessageResult, the response).

"Plain" is the form real clients send when nothing special is asked of this broker: a
SEND_MESSAGE or SEND_MESSAGE_V2 with a JSON header whose fields the native header decoder takes
(remoting/send_header.py), a topic already in the topic table, writable, not one of the
forbidden or retry topics, a queue id the topic has, no transaction type in sysFlag, and no
DELAY, timer or TRAN_MSG property; on a broker that answers before durability (ASYNC_FLUSH and
ASYNC_MASTER), is writable, not fenced and not short of in-sync replicas. ``plain_sends``
returns None as soon as one request of the group is anything else, and the whole group then goes
through ``SendMessageProcessor.reference_group``, the reference (so is every group in pure mode,
where the native header decoder is absent). tests/unit/broker/test_send_plain.py holds both to
the same CommitLog bytes, ConsumeQueue units and reply frames.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.processor.send_reply import REPLY_PIECES
from broker.store.dispatch import ALWAYS_HEARD
from broker.store.group_put import finish_plain_run, put_plain_run
from broker.store.plain_pass import plain_pass
from broker.store.store_native import native as store_native
from broker.timer.transform import TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS
from remoting import constants as K
from remoting import message as codec
from remoting.codec_native import native
from remoting.codes import RequestCode, SerializeType
from remoting.command import EncodedReply
from remoting.message import TRANSACTION_ROLLBACK_TYPE, MessageConst
from remoting.names import valid_topics

if TYPE_CHECKING:
    from broker.processor.send import SendMessageProcessor
    from remoting.command import RemotingCommand
    from remoting.connection import Connection

_V1 = int(RequestCode.SEND_MESSAGE)
_V2 = int(RequestCode.SEND_MESSAGE_V2)
_JSON = int(SerializeType.JSON)
# Properties that ask for more than an append: each sends the request to the reference.
_SPECIAL = frozenset(
    {
        MessageConst.DELAY,
        MessageConst.TRAN_MSG,
        TIMER_DELIVER_MS,
        TIMER_DELAY_SEC,
        TIMER_DELAY_MS,
    }
)
_WAIT = MessageConst.WAIT
_CLUSTER = MessageConst.CLUSTER
_RETRY_PREFIX = K.RETRY_GROUP_TOPIC_PREFIX
_FORBIDDEN = K.NOT_ALLOWED_SEND_TOPICS
_PERM_WRITE = K.PERM_WRITE
_decode = native.decode_send_header if native is not None else None
_BORN_HOST = operator.attrgetter("born_host")
_to_properties = native.string_to_properties if native is not None else None


def plain_decoder_built() -> bool:
    """Whether the native header decoder the plain pass needs is here (not in pure mode)."""
    return _decode is not None


def born_host(connection: Connection) -> tuple[bytes, int]:
    """The connection's peer as a record's born host (address bytes, port), made once."""
    cached = connection.attributes.get("born_host")
    if cached is None:
        host, _, port = connection.peer.rpartition(":")
        cached = connection.attributes["born_host"] = (
            codec.host_bytes(host.strip("[]")),
            int(port),
        )
        connection.born_host = cached  # plain_round's map reads it
    return cached


def broker_takes_plain(processor: SendMessageProcessor) -> bool:
    """The broker-wide conditions of the plain pass (Java's msgCheck's first checks, and an
    answer that does not wait for a flush or a slave). The one place they are written:
    ``plain_round``, the lone send and the batch pass all ask it."""
    broker = processor.broker
    return (
        processor.plain_mode
        and bool(broker.config.broker_permission & _PERM_WRITE)
        and broker.registrar.fenced is None
        and (not broker.min_in_sync_slaves or broker.enough_in_sync_slaves())
    )


def plain_sends(
    processor: SendMessageProcessor,
    connection: Connection,
    requests: list[RemotingCommand],
    connections: list[Connection] | None = None,
) -> list[Any] | None:
    """The replies (frames, or the reference's answers for messages the append passed on) to
    a group of plain sends, in order; None when one request is not plain. ``connections``:
    who sent each request, when a selector round's group spans connections."""
    if connections is None:
        return plain_round(processor, [connection] * len(requests), requests, born_host(connection))
    return plain_round(processor, connections, requests)


def plain_round(
    processor: SendMessageProcessor,
    connections: list[Connection],
    requests: list[RemotingCommand],
    hosts: tuple[bytes, int] | None = None,
) -> list[Any] | None:
    """``plain_sends`` of a selector round (``requests[i]`` from ``connections[i]``), the
    server's first try for a round when no ACL asks first (remoting/server.py
    ``register_round``): the results, or None with nothing done when one request is not a
    plain send or the broker does not take plain sends now (the server's general path then
    judges the round, as it did every round before). ``hosts``: every request's born host,
    when one connection sent them all. Where the C is built the server's round processor is
    RoundSend (``round_front``), which calls this for every round it does not take whole."""
    broker = processor.broker
    if not broker_takes_plain(processor):
        return None
    if hosts is None:  # born_host's kept values in one C-level map; a first send makes its own
        try:
            hosts = list(map(_BORN_HOST, connections))  # type: ignore[assignment]
        except AttributeError:  # a connection of another kind (a test's fake)
            hosts = [None]  # type: ignore[assignment, list-item]
        if None in hosts:  # type: ignore[operator]
            hosts = [c.attributes.get("born_host") or born_host(c) for c in connections]  # type: ignore[assignment]
    # _store_plain inline (one frame a round less)
    cluster = broker.config.broker_cluster_name
    rows = plain_rows(
        requests, valid_topics, processor.queue_bounds.lookup, _SPECIAL, cluster, hosts
    )
    if rows is None:
        return None
    store = broker.store
    results = plain_pass(store, rows, REPLY_PIECES, broker.stats.put_items, cluster, ALWAYS_HEARD)
    if type(results) is list and len(results) >= len(requests):
        return results
    return round_rest(processor, connections, requests, rows, results, cluster)


def round_rest(
    processor: SendMessageProcessor,
    connections: list[Connection],
    requests: list[RemotingCommand],
    rows: list[tuple[Any, ...]],
    passed: Any,
    cluster: str,
) -> list[Any] | None:
    """``plain_round``'s tail after ``plain_pass`` returned ``passed`` (and RoundSend's, the
    round in C, round_send.c, when that was not a list of every request's result): what the
    pass left to Python, then the requests it did not take through the reference."""
    results = (
        passed if type(passed) is list else _store_rest(processor.broker, rows, passed, cluster)
    )
    if results is None:
        return None
    done = len(results)
    if done < len(requests):
        # One the single-pass append did not take (a segment to roll, a refusal): the rest go
        # to the reference in order, after the ones stored.
        results += processor.reference_group(connections[done], requests[done:], connections[done:])
    return results


def round_front(server: Any, processor: SendMessageProcessor) -> tuple[Any, Any]:
    """The server's round processor and the selector's round handler (``register_round``'s
    two): the store module's RoundSend (round_send.c, which says what it reads and when it
    hands a round to ``plain_round`` or the server's ``handle_round``), which answers a round
    of plain sends in C, and its ``serve``; where it is not built (pure modes, a Python twin
    of the rows or the pass switched on), ``plain_round`` bound to the processor, the
    reference, and None (the server's ``handle_round``)."""
    if store_native is None or plain_pass is not store_native.plain_pass:
        return functools.partial(plain_round, processor), None
    if native is None or plain_rows is not native.plain_send_rows:
        return functools.partial(plain_round, processor), None
    front = store_native.RoundSend(
        server, processor, plain_rows, valid_topics, _SPECIAL, REPLY_PIECES, ALWAYS_HEARD,
        plain_round, round_rest, _PERM_WRITE,
    )  # fmt: skip
    return front, front.serve


def plain_send_reply(
    processor: SendMessageProcessor, connection: Connection, request: RemotingCommand
) -> EncodedReply | None:
    """A lone plain send (a sync send arrives alone in its read) through the same pass: its
    reply, or None, with nothing stored, for the caller's reference path. Under sync sends most
    requests come this way: the kept born host is read inline (a Python frame a send fewer)."""
    if not broker_takes_plain(processor):
        return None
    host = getattr(connection, "born_host", None) or born_host(connection)
    replies = _store_plain(processor, host, [request])
    return EncodedReply(0, replies) if replies else None


def lone_front(server: Any, processor: SendMessageProcessor, handle: Any) -> Any:
    """The server's request handler that answers a lone plain send in C (the store module's
    LoneSend, lone_send.c, which says what it reads and when it hands a request to the
    Python path), or None where it is not built: then the server calls its
    ``handle_request``, as it does for every request in pure mode. ``handle`` is the function
    the processor's registered handlers bind (SendMessageProcessor.handle): the front takes a
    send only while the server's table holds that processor's. Built only where the chain it
    stands in for would call the same C (the native rows and pass)."""
    if store_native is None or plain_pass is not store_native.plain_pass:
        return None
    if native is None or plain_rows is not native.plain_send_rows:
        return None
    return store_native.LoneSend(
        server, processor, handle, plain_rows, valid_topics, _SPECIAL, REPLY_PIECES,
        ALWAYS_HEARD, EncodedReply, lone_rest, (_V1, _V2), _PERM_WRITE,
    )  # fmt: skip


def lone_rest(
    processor: SendMessageProcessor,
    connection: Connection,
    request: RemotingCommand,
    rows: list[tuple[Any, ...]],
    passed: Any,
    cluster: str,
) -> Any:
    """What the lone send's chain does after ``plain_pass`` returned ``passed``, for LoneSend
    when that was not a non-empty list: ``_store_plain``'s tail, ``plain_send_reply``'s reply
    and, when nothing was stored, ``handle``'s reference path."""
    replies = (
        passed if type(passed) is list else _store_rest(processor.broker, rows, passed, cluster)
    )
    if replies:
        return EncodedReply(0, replies)
    return processor.reference_one(connection, request)


def _store_plain(
    processor: SendMessageProcessor,
    hosts: tuple[bytes, int] | list[tuple[bytes, int]],
    requests: list[RemotingCommand],
) -> list[Any] | None:
    """The reply frames of the requests the single pass stored, in order (it stops at the
    first one the append passes on); None when one request is not plain or the store refuses
    every put now."""
    broker = processor.broker
    cluster = broker.config.broker_cluster_name
    rows = plain_rows(
        requests, valid_topics, processor.queue_bounds.lookup, _SPECIAL, cluster, hosts
    )
    if rows is None:
        return None
    store = broker.store
    replies = plain_pass(store, rows, REPLY_PIECES, broker.stats.put_items, cluster, ALWAYS_HEARD)
    if type(replies) is list:
        return replies
    return _store_rest(broker, rows, replies, cluster)


def _store_rest(
    broker: Any, rows: list[tuple[Any, ...]], passed: tuple[Any, ...] | None, cluster: str
) -> list[Any] | None:
    """What ``plain_pass`` left: the whole pass (``passed`` None: ``put_plain_run``, which
    decides every case) or what follows its append (``finish_plain_run``), then the broker's
    stats of the pass; None when the store refuses every put now (the reference answers
    each)."""
    if passed is None:
        stored = put_plain_run(broker.store, rows, REPLY_PIECES)
        if stored is None:
            return None
    else:
        stored = finish_plain_run(broker.store, passed)
    replies, totals = stored
    if totals:
        broker.stats.on_puts(totals, cluster)
    return replies


def python_plain_rows(
    requests: list[RemotingCommand],
    topics: set[str],
    bound_of: Callable[[str], int],
    specials: frozenset[str],
    cluster: str,
    hosts: tuple[bytes, int] | list[tuple[bytes, int]],
) -> list[tuple[Any, ...]] | None:
    """Each request's append values (topic, queue id, sysFlag, properties, body, flag, born
    timestamp, born host, reconsume times, opaque), or None when one is not plain: another
    code or serialization, a header the native decoder leaves to the reference (a scanned
    command's ``header_values``, remoting/command.py ScannedCommand, stand for its decode), a queue id
    not under ``bound_of(topic)`` (asked once per topic), a transaction type, a property in
    ``specials``. ``hosts``: the born host of every request, or a list of each one's (as
    long as ``requests``). The properties are the record's bytes made from the sent string
    (``row_properties``), so the append does not encode a dict again. The reference of
    remoting/native/codec/plain_send.c."""
    if type(hosts) is list and len(hosts) != len(requests):
        raise TypeError("plain_send_rows: one born host per request")
    bounds: dict[str, int] = {}
    rows = []
    for index, request in enumerate(requests):
        host = hosts[index] if type(hosts) is list else hosts
        code = request.code
        if (
            type(code) is not int
            or (code != _V2 and code != _V1)
            or request.serialize_type != _JSON
        ):
            return None
        values = getattr(request, "header_values", None)
        if values is None:
            fields = request.ext_fields
            if type(fields) is not dict:
                return None
            values = _decode(fields, code == _V2, topics)  # type: ignore[misc]
            if values is None:
                return None
        elif values[1] not in topics or values[2] not in topics:  # as _decode checks them
            return None
        (_, topic, _, _, queue_id, sys_flag, born_ts, flag, text, reconsume, *_) = values
        bound = bounds.get(topic)
        if bound is None:
            bound = bounds[topic] = _ask_bound(bound_of, topic)
        if not 0 <= queue_id < bound or sys_flag & TRANSACTION_ROLLBACK_TYPE:
            return None
        properties = row_properties(text, specials, cluster)
        if properties is None:
            return None
        rows.append(
            (topic, queue_id, sys_flag, properties, request.body, flag, born_ts, host,
             reconsume or 0, request.opaque)
        )  # fmt: skip
    return rows


def _ask_bound(bound_of: Any, topic: str) -> int:
    """``bound_of(topic)``, or for a (table, kept, fallback) triple (QueueBounds.lookup) the
    bound it keeps while the table holds the config it came from, else ``fallback(topic)``
    (plain_send.c's ask_bound)."""
    if type(bound_of) is not tuple or len(bound_of) != 3:
        return bound_of(topic)  # type: ignore[no-any-return]
    table, kept, fallback = bound_of
    if type(table) is dict and type(kept) is dict:
        config = table.get(topic)
        entry = kept.get(topic) if config is not None else None
        if type(entry) is tuple and len(entry) == 2 and entry[0] is config:
            return entry[1]  # type: ignore[no-any-return]
    return fallback(topic)  # type: ignore[no-any-return]


plain_rows = python_plain_rows if native is None else native.plain_send_rows

# python_property_bytes' bounds: past them the dict path takes the row (as plain_send.c)
_MAX_SEGMENTS = 32
_MAX_SPECIALS = 8
_SKIP = object()  # python_property_bytes: the dict path takes this row


def row_properties(
    text: Any, specials: frozenset[str], cluster: str
) -> bytes | dict[str, str] | None:
    """A plain row's properties: the record's bytes (``python_property_bytes``), else the dict
    path's dict; None when a name is special."""
    encoded = python_property_bytes(text, specials, cluster)
    if encoded is not _SKIP:
        return encoded  # type: ignore[return-value]
    properties = _to_properties(text)  # type: ignore[misc]
    if not specials.isdisjoint(properties):
        return None
    # As the reference: WAIT is not stored with a single message, CLUSTER is
    properties[_CLUSTER] = cluster
    properties.pop(_WAIT, None)
    return properties


def python_property_bytes(text: Any, specials: frozenset[str], cluster: str) -> Any:
    """The record's property bytes straight from the sent string, byte for byte what the dict
    path's record holds (``properties_to_string`` of ``string_to_properties(text)`` with
    CLUSTER set and WAIT dropped): the segments the parse keeps, in order, WAIT's left out,
    CLUSTER's value replaced (CLUSTER last when not sent), joined by \x02. None when a name is
    special; ``_SKIP`` for what the dict path takes (a duplicate name: the dict keeps the first
    place and the last value; more than _MAX_SEGMENTS; text that is not UTF-8). The reference
    of plain_send.c's property_bytes."""
    if len(specials) > _MAX_SPECIALS or not all(type(s) is str for s in specials):
        return _SKIP
    try:
        raw = b"" if text is None else text.encode() if isinstance(text, str) else None
        cluster_raw = cluster.encode()
        special_names = {s.encode() for s in specials}
    except UnicodeEncodeError:
        return _SKIP
    if raw is None:
        return _SKIP
    kept: list[bytes] = []
    names: set[bytes] = set()
    clustered = False
    for segment in raw.split(b"\x02"):
        name, separator, value = segment.partition(b"\x01")
        if not (name and separator and value):
            continue
        if name in special_names:
            return None
        if name in names or len(names) == _MAX_SEGMENTS:
            return _SKIP
        names.add(name)
        if name == b"CLUSTER":
            clustered = True
            segment = b"CLUSTER\x01" + cluster_raw
        elif name == b"WAIT":
            continue
        kept.append(segment)
    if not clustered:
        kept.append(b"CLUSTER\x01" + cluster_raw)
    return b"\x02".join(kept)


class QueueBounds:
    """``bound_of`` for ``plain_rows``, made once per processor (a lone send asked a lambda made
    per call): a topic's bound kept with the TopicConfig it came from. A config is frozen (an
    update puts a new one in the table), so the bound holds while the table holds that very
    object. Only topics the table has are kept: a client naming others adds nothing."""

    __slots__ = ("_bounds", "_table", "lookup")

    def __init__(self, table: dict[str, Any]) -> None:
        self._table = table
        self._bounds: dict[str, tuple[Any, int]] = {}
        # what plain_rows takes instead of this callable: it reads a kept bound itself (the
        # two dicts are never rebound) and calls this only for a topic it has none of
        self.lookup = (table, self._bounds, self)

    def __call__(self, topic: str) -> int:
        config = self._table.get(topic)
        kept = self._bounds.get(topic)
        if kept is not None and kept[0] is config:
            return kept[1]
        bound = _queue_bound(config, topic)
        if config is None:
            self._bounds.pop(topic, None)  # deleted: forgotten
        else:
            self._bounds[topic] = (config, bound)
        return bound


def _queue_bound(config: Any, topic: str) -> int:
    """The queue ids a send to ``topic`` may name (msgCheck's test), 0 for a topic the reference
    must answer (unknown: auto-creation; not writable, forbidden, a retry topic: refusals)."""
    if config is None or not config.perm & _PERM_WRITE:
        return 0
    if topic in _FORBIDDEN or topic.startswith(_RETRY_PREFIX):
        return 0
    return max(config.write_queue_nums, config.read_queue_nums)
