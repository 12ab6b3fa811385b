"""AdminClient's message reads and resends (a mixin): the store time of the message at a
queue offset (what lag in seconds is measured from), a topic's messages stored in a time
range, and a dead letter sent back to its group. The reads pull as ``TOOLS_CONSUMER`` and
commit nothing, as mqadmin's printMsg and queryMsgByOffset do."""

from __future__ import annotations

from client.message import Message, SendResult
from client.producer import Producer
from client.puller import Puller, PullTarget
from client.route import subscribe_queues
from remoting import constants as K
from remoting.body import MessageQueue, SubscriptionData
from remoting.message import MessageConst, MessageExt

# Set by brokers and clients on the way (pull bounds, delay bookkeeping, the sender's
# cluster and wait flag, the id a new send replaces): a resend carries none of them.
TRANSIENT_PROPERTIES = frozenset(
    {
        MessageConst.MIN_OFFSET,
        MessageConst.MAX_OFFSET,
        MessageConst.REAL_TOPIC,
        MessageConst.REAL_QID,
        MessageConst.DELAY,
        MessageConst.CLUSTER,
        MessageConst.WAIT,
        MessageConst.UNIQ_KEY,
    }
)
RESEND_PRODUCER_GROUP = "CID_RMQ_SYS_CONSOLE_RESEND"
MAX_RANGE_MESSAGES = 2000  # rocketmq-dashboard's cap on a query by topic and time


class MessageAdmin:
    """Mixed into AdminClient, whose ``instance`` and ``topic_route`` it uses."""

    def _tools_puller(self, batch: int) -> Puller:
        return Puller(self.instance, K.TOOLS_CONSUMER_GROUP, batch=batch)

    async def store_time_at(self, mq: MessageQueue, queue_offset: int) -> int | None:
        """The store time (ms) of the message at ``queue_offset`` of ``mq``, or of the oldest
        one after it when that offset's message has expired; None when the queue holds no
        message from there on."""
        puller = self._tools_puller(1)
        target = PullTarget(mq, SubscriptionData(topic=mq.topic), commit=False)
        offset = queue_offset
        for _ in range(2):  # a second pull only where the broker moved the offset forward
            _, msgs, next_offset = await puller.pull_once(target, offset, suspend_ms=0)
            if msgs:
                return msgs[0].store_timestamp
            if next_offset <= offset:
                return None
            offset = next_offset
        return None

    async def messages_by_time(
        self, topic: str, begin_ms: int, end_ms: int, max_num: int = MAX_RANGE_MESSAGES
    ) -> tuple[list[MessageExt], bool]:
        """``topic``'s messages stored in [begin_ms, end_ms] over its readable queues, oldest
        first, and whether there were more than ``max_num`` (then the first ``max_num``)."""
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        more = False
        for mq in subscribe_queues(topic, route):
            queue_msgs, queue_more = await self._queue_range(mq, begin_ms, end_ms, max_num + 1)
            found += queue_msgs
            more = more or queue_more
        found.sort(key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))
        return found[:max_num], more or len(found) > max_num

    async def _queue_range(
        self, mq: MessageQueue, begin_ms: int, end_ms: int, limit: int
    ) -> tuple[list[MessageExt], bool]:
        puller = self._tools_puller(32)
        target = PullTarget(mq, SubscriptionData(topic=mq.topic), commit=False)
        offset = await puller.search_offset(mq, begin_ms)
        stop = await puller.max_offset(mq)
        out: list[MessageExt] = []
        while offset < stop:
            _, msgs, next_offset = await puller.pull_once(target, offset, suspend_ms=0)
            out += [m for m in msgs if begin_ms <= m.store_timestamp <= end_ms]
            if len(out) >= limit:
                return out[:limit], True
            if next_offset <= offset or (msgs and msgs[-1].store_timestamp > end_ms):
                break
            offset = next_offset
        return out, False

    async def resend_dead_letter(self, msg: MessageExt, group: str) -> SendResult:
        """Send a message of ``%DLQ%<group>`` to ``%RETRY%<group>``: the group (and no other)
        consumes it again, under its original topic (RETRY_TOPIC, which the broker set when
        the message was first sent back), with its retries counted from zero. It gets a new
        msgId; ORIGIN_MESSAGE_ID keeps the first one."""
        kept = {k: v for k, v in msg.properties.items() if k not in TRANSIENT_PROPERTIES}
        kept.setdefault(MessageConst.ORIGIN_MESSAGE_ID, msg.msg_id)
        producer = Producer(self.instance, RESEND_PRODUCER_GROUP)
        return await producer.send(Message(K.retry_topic(group), msg.body, properties=kept))
