"""Transactional messages (store-format.md §11, remoting.md §9.8).

A half message (SEND with TRAN_MSG=true) is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its
real topic and queue in properties, invisible to consumers. END_TRANSACTION COMMIT writes a
COMMIT-typed copy to the real queue and an op record; ROLLBACK writes only the op record (topic
RMQ_SYS_TRANS_OP_HALF_TOPIC, tag ``d``, body = the half's queue offset). The check service asks a
producer of the group about halves left undecided longer than ``transactionTimeOut``: as in
RocketMQ the half is re-appended (TRANSACTION_CHECK_TIMES + 1) so the scan can move on, and the
producer answers with END_TRANSACTION for the new copy; after ``transactionCheckMax`` checks the
half goes to TRANS_CHECK_MAX_TIME_TOPIC.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import trio

from broker.store.types import MessageExtBrokerInner
from broker.timer.transform import is_timer
from remoting import constants as K
from remoting import message as codec
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import EndTransactionRequestHeader
from remoting.message import MessageConst, MessageExt
from remoting.record import pack_record_into, record_size
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)

TYPE_MASK = 0xC
COMMIT, ROLLBACK = codec.TRANSACTION_COMMIT_TYPE, codec.TRANSACTION_ROLLBACK_TYPE
OP_TAG = "d"
SCAN_LIMIT = 10_000
DECIDED_KEPT = 1_000_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def inner_from(msg: MessageExt, **changes: Any) -> MessageExtBrokerInner:
    host, _, port = msg.born_host.rpartition(":")
    inner = MessageExtBrokerInner(
        topic=msg.topic,
        queue_id=msg.queue_id,
        body=msg.body,
        properties=dict(msg.properties),
        flag=msg.flag,
        sys_flag=msg.sys_flag & ~(codec.BORNHOST_V6_FLAG | codec.STOREHOSTADDRESS_V6_FLAG),
        born_timestamp=msg.born_timestamp,
        born_host=(codec.host_bytes(host.strip("[]")), int(port or 0)),
        reconsume_times=msg.reconsume_times,
    )
    for key, value in changes.items():
        setattr(inner, key, value)
    return inner


def encode_record(msg: MessageExt, topic: str, queue_id: int) -> bytes:
    """``msg`` in the stored-record layout with another topic and queue (the CHECK body)."""
    topic_bytes = topic.encode()
    props = codec.properties_to_string(msg.properties).encode()
    born_ip, _, born_port = msg.born_host.rpartition(":")
    store_ip, _, store_port = msg.store_host.rpartition(":")
    born, store = codec.host_bytes(born_ip.strip("[]")), codec.host_bytes(store_ip.strip("[]"))
    size = record_size(
        len(msg.body),
        len(topic_bytes),
        len(props),
        born_v6=len(born) == 16,
        store_v6=len(store) == 16,
    )
    buffer = bytearray(size)
    pack_record_into(
        buffer,
        0,
        total_size=size,
        body_crc=msg.body_crc,
        queue_id=queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        phys_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag & ~(codec.BORNHOST_V6_FLAG | codec.STOREHOSTADDRESS_V6_FLAG),
        born_timestamp=msg.born_timestamp,
        born_address=born,
        born_port=int(born_port or 0),
        store_timestamp=msg.store_timestamp,
        store_address=store,
        store_port=int(store_port or 0),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        body=msg.body,
        topic=topic_bytes,
        properties=props,
    )
    return bytes(buffer)


class TransactionalMessageService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._done: set[int] = set()  # half queue offsets with an op record
        # Transactions decided, by the queue offset of their first half: a check-back re-appends
        # a half, so one transaction can have several copies and be answered once per copy
        # (the producer's own late END and the check's answer). Java commits each answer; we
        # commit the first and only record the others, so a commit is consumed once.
        self._decided: set[int] = set()
        self._op_read = -1  # op queue offset read up to (-1: not loaded)
        # Op records read, as (op offset, half offset), not yet behind the op progress. As in
        # Java, the op progress passes an op once the half scan has passed its half, so a
        # restart reads only the ops that still matter.
        self._ops: deque[tuple[int, int]] = deque()

    # ------------------------------------------------------------------ half messages

    @staticmethod
    def prepare(msg: MessageExtBrokerInner) -> None:
        """Turn a TRAN_MSG send into its half message (in place)."""
        msg.properties[MessageConst.REAL_TOPIC] = msg.topic
        msg.properties[MessageConst.REAL_QID] = str(msg.queue_id)
        msg.topic, msg.queue_id = K.TRANS_HALF_TOPIC, 0
        msg.sys_flag &= ~TYPE_MASK

    def _half(self, commit_log_offset: int) -> MessageExt | None:
        raw = self.broker.store.look_message_by_offset(commit_log_offset)
        if raw is None:
            return None
        try:
            return codec.decode_message(bytes(raw), decompress=False)
        except codec.MessageDecodeError:
            return None

    def _put(self, inner: MessageExtBrokerInner) -> Any:
        return self.broker.store.put_message(inner)

    @staticmethod
    def transaction_of(half: MessageExt) -> int:
        """The queue offset of a transaction's first half, which its copies carry along."""
        first = half.properties.get(MessageConst.TRAN_PREPARED_QUEUE_OFFSET, "")
        return int(first) if first.isdigit() else half.queue_offset

    def _op(self, half: MessageExt) -> None:
        """Record that ``half`` is dealt with. The body is the half's queue offset, as Java
        writes and reads it; the first half's offset rides in a property Java ignores."""
        transaction = self.transaction_of(half)
        self._put(
            MessageExtBrokerInner(
                topic=K.TRANS_OP_HALF_TOPIC,
                queue_id=0,
                body=str(half.queue_offset).encode(),
                properties={
                    MessageConst.TAGS: OP_TAG,
                    MessageConst.TRAN_PREPARED_QUEUE_OFFSET: str(transaction),
                },
                born_timestamp=now_ms(),
            )
        )
        self._done.add(half.queue_offset)
        self._remember(transaction)

    def _remember(self, transaction: int) -> None:
        self._decided.add(transaction)
        if len(self._decided) > DECIDED_KEPT:
            # the oldest transactions: their copies were checked long ago
            self._decided = set(sorted(self._decided)[len(self._decided) // 2 :])

    # ------------------------------------------------------------------ END_TRANSACTION

    def end_transaction(self, connection: Any, request: RemotingCommand) -> RemotingCommand | None:
        broker = self.broker
        if broker.is_slave:
            return request.error_response(
                ResponseCode.SLAVE_NOT_AVAILABLE, "Slave broker does not accept transaction ends"
            )
        header = decode_header(EndTransactionRequestHeader, request.ext_fields)
        decision, group = header.commit_or_rollback, header.producer_group
        commit_log_offset, queue_offset = header.commit_log_offset, header.tran_state_table_offset
        if decision not in (COMMIT, ROLLBACK):
            return None  # unknown: the check service will ask again (Java ignores it too)
        half = self._half(commit_log_offset)
        problem = self._check_half(half, group, queue_offset, commit_log_offset)
        if problem:
            log.warning("END_TRANSACTION refused: %s", problem)
            return request.error_response(ResponseCode.SYSTEM_ERROR, problem)
        assert half is not None
        self._read_ops()
        if self.transaction_of(half) in self._decided:
            log.info(
                "END_TRANSACTION for %s: already decided by an earlier answer; recorded only",
                half.msg_id,
            )
            self._op(half)
            return request.make_response()
        if decision == COMMIT:
            props = {
                k: v
                for k, v in half.properties.items()
                if k
                not in (
                    MessageConst.REAL_TOPIC,
                    MessageConst.REAL_QID,
                    MessageConst.TRAN_MSG,
                    MessageConst.TRANSACTION_CHECK_TIMES,
                    MessageConst.TRAN_PREPARED_QUEUE_OFFSET,
                )
            }
            committed = inner_from(
                half,
                topic=half.properties[MessageConst.REAL_TOPIC],
                queue_id=int(half.properties[MessageConst.REAL_QID]),
                properties=props,
                sys_flag=(half.sys_flag & ~TYPE_MASK) | COMMIT,
                prepared_transaction_offset=half.commit_log_offset,
            )
            if is_timer(props):  # a 5.x timer message sent in a transaction: parked now
                self.broker.timer.park(committed)
            result = self._put(committed)
            if not result.ok:
                return request.error_response(
                    ResponseCode.SYSTEM_ERROR, f"commit failed: {result.status.name}"
                )
        self._op(half)
        return request.make_response()

    @staticmethod
    def _check_half(
        half: MessageExt | None, group: str, queue_offset: int, commit_log_offset: int
    ) -> str | None:
        if half is None or half.topic != K.TRANS_HALF_TOPIC:
            return f"Find prepared transaction message failed at offset {commit_log_offset}"
        if half.properties.get(MessageConst.PGROUP) != group:
            return "The producer group wrong"
        if half.queue_offset != queue_offset:
            return "The transaction state table offset wrong"
        if half.commit_log_offset != commit_log_offset:
            return "The commit log offset wrong"
        return None

    # ------------------------------------------------------------------ check-back

    def _read_ops(self) -> None:
        store = self.broker.store
        if self._op_read < 0:
            progress = self.broker.offsets.query(K.TRANS_CHECK_GROUP, K.TRANS_OP_HALF_TOPIC, 0)
            self._op_read = max(progress, store.get_min_offset_in_queue(K.TRANS_OP_HALF_TOPIC, 0))
        top = store.get_max_offset_in_queue(K.TRANS_OP_HALF_TOPIC, 0)
        while self._op_read < top:
            result = store.get_message(
                K.TRANS_CHECK_GROUP, K.TRANS_OP_HALF_TOPIC, 0, self._op_read, 32
            )
            if not result.buffers:
                break
            for raw in result.buffers:
                msg = codec.decode_message(bytes(raw))
                body = msg.body.decode(errors="replace")
                if body.isdigit():
                    self._done.add(int(body))
                    self._ops.append((msg.queue_offset, int(body)))
                    first = msg.properties.get(MessageConst.TRAN_PREPARED_QUEUE_OFFSET, body)
                    self._remember(int(first) if first.isdigit() else int(body))
                self._op_read = msg.queue_offset + 1

    async def check_once(self, *, now: int | None = None) -> int:
        """One scan of the half queue; returns how many producers were asked."""
        broker, store = self.broker, self.broker.store
        now = now if now is not None else now_ms()
        self._read_ops()
        offsets = broker.offsets
        progress = max(offsets.query(K.TRANS_CHECK_GROUP, K.TRANS_HALF_TOPIC, 0), 0)
        top = store.get_max_offset_in_queue(K.TRANS_HALF_TOPIC, 0)
        asked, offset = 0, progress
        while offset < top and offset - progress < SCAN_LIMIT:
            result = store.get_message(K.TRANS_CHECK_GROUP, K.TRANS_HALF_TOPIC, 0, offset, 32)
            if not result.buffers:
                offset = max(offset + 1, result.next_begin_offset)
                continue
            stop = False
            for raw in result.buffers:
                half = codec.decode_message(bytes(raw), decompress=False)
                if half.queue_offset in self._done:
                    offset = half.queue_offset + 1
                    continue
                timeout = broker.config.transaction_time_out
                immunity = half.properties.get(MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS)
                if immunity and immunity.isdigit():
                    timeout = int(immunity) * 1000
                if now - half.store_timestamp < timeout:
                    stop = True  # younger ones follow
                    break
                self._resolve(half)
                asked += 1
                offset = half.queue_offset + 1
            if stop:
                break
            await trio.lowlevel.checkpoint()
        if offset != progress:
            offsets.commit(K.TRANS_CHECK_GROUP, K.TRANS_HALF_TOPIC, 0, offset)
        self._done = {o for o in self._done if o >= offset}
        self._advance_op_progress(offset)
        return asked

    def _advance_op_progress(self, half_progress: int) -> None:
        ops = self._ops
        passed = False
        while ops and ops[0][1] < half_progress:
            ops.popleft()
            passed = True
        if passed:
            op_progress = ops[0][0] if ops else self._op_read
            self.broker.offsets.commit(K.TRANS_CHECK_GROUP, K.TRANS_OP_HALF_TOPIC, 0, op_progress)

    def _resolve(self, half: MessageExt) -> None:
        """Re-append ``half`` (so the scan can move past it) and ask its producer about it."""
        if self.transaction_of(half) in self._decided:
            self._op(half)  # a copy of a transaction answered meanwhile
            return
        times = int(half.properties.get(MessageConst.TRANSACTION_CHECK_TIMES, "0") or 0) + 1
        props = dict(half.properties)
        props[MessageConst.TRANSACTION_CHECK_TIMES] = str(times)
        props.setdefault(MessageConst.TRAN_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
        if times > self.broker.config.transaction_check_max:
            log.warning(
                "half message %s checked %d times: moved to %s",
                half.msg_id,
                times - 1,
                K.TRANS_CHECK_MAX_TIME_TOPIC,
            )
            self._put(
                inner_from(half, topic=K.TRANS_CHECK_MAX_TIME_TOPIC, queue_id=0, properties=props)
            )
            return
        result = self._put(inner_from(half, properties=props))
        if not result.ok:
            return
        append = result.append
        copy = codec.decode_message(
            bytes(self.broker.store.look_message_by_offset(append.wrote_offset)), decompress=False
        )
        self._ask_producer(copy)

    def _ask_producer(self, half: MessageExt) -> None:
        group = half.properties.get(MessageConst.PGROUP, "")
        channels = self.broker.clients.producer_channels(group)
        if not channels:
            log.info("no producer of %s online to check %s", group, half.msg_id)
            return
        body = encode_record(
            half,
            half.properties.get(MessageConst.REAL_TOPIC, half.topic),
            int(half.properties.get(MessageConst.REAL_QID, "0")),
        )
        fields = {
            "tranStateTableOffset": str(half.queue_offset),
            "commitLogOffset": str(half.commit_log_offset),
            "msgId": half.msg_id,
            "transactionId": half.msg_id,
            "offsetMsgId": half.offset_msg_id,
        }
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, fields, body, oneway=True
        )
        channels[0].send_nowait(request)

    async def run(self) -> None:
        interval = self.broker.config.transaction_check_interval / 1000
        while True:
            await trio.sleep(interval)
            try:
                await self.check_once()
            except (OSError, codec.MessageDecodeError) as exc:
                log.warning("transaction check failed: %s", exc)
