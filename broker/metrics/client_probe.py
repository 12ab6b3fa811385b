"""BroadcastProbe: the progress of each client of a broadcasting group on this broker's queues.

A broadcasting consumer keeps its offsets itself (Java's LocalFileOffsetStore), so the broker's
offset table says nothing true about it: rocketmq-exporter leaves such groups out of
rocketmq_group_diff, and so does QueueFamilies. What the client has consumed is in its running
info (GET_CONSUMER_RUNNING_INFO: each queue's commitOffset), which ``mqadmin consumerStatus``
and the dashboard ask for. This probe asks every online client of every broadcasting group, at
most MAX_CLIENTS of them, every metricsBroadcastProbeInterval (15 s: Prometheus' usual
scrape interval), each call bounded by CALL_TIMEOUT_S, and keeps
per (group, topic, client) the lag on this broker's queues. A scrape reads the last figures and
never waits for a client; a client that does not answer drops out until it does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from metrics.lag import NO_LAG, Lag, queue_lag
from remoting.body import ConsumerRunningInfo, MessageModel, ProcessQueueInfo
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError, RequestError
from remoting.serde import decode_body

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 3.0
MAX_CLIENTS = 256  # bounds the calls and the series: groups x topics x clients

ClientKey = tuple[str, str, str]  # (group, topic, client id)


def client_offset(process_queue: ProcessQueueInfo) -> int:
    """Where the client is: its commitOffset, or, before it consumed anything from the queue
    (Java's client reports -1 then, its offset store has no entry yet), the first message it
    holds unconsumed."""
    if process_queue.commit_offset < 0 and process_queue.cached_msg_count > 0:
        return process_queue.cached_msg_min_offset
    return process_queue.commit_offset


class BroadcastProbe:
    name = "metrics-broadcast-probe"

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.lags: dict[ClientKey, Lag] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        interval_s = self.broker.config.metrics_broadcast_probe_interval / 1000
        while True:
            await self.probe_once()
            await trio.sleep(interval_s)

    def _targets(self) -> list[tuple[str, str, Any]]:
        """(group, client id, connection) of each online client of a broadcasting group."""
        targets = []
        for group, info in list(self.broker.clients.consumer_groups.items()):
            if info.message_model is not MessageModel.BROADCASTING:
                continue
            for channel in list(info.channels.values()):
                targets.append((group, channel.client_id, channel.channel))
        return targets[:MAX_CLIENTS]

    async def probe_once(self) -> None:
        answers: dict[tuple[str, str], ConsumerRunningInfo] = {}

        async def ask(group: str, client_id: str, channel: Any) -> None:
            running = await self._running_info(group, client_id, channel)
            if running is not None:
                answers[group, client_id] = running

        async with trio.open_nursery() as nursery:
            for group, client_id, channel in self._targets():
                nursery.start_soon(ask, group, client_id, channel)
        self.lags = self._lags(answers)

    async def _running_info(
        self, group: str, client_id: str, channel: Any
    ) -> ConsumerRunningInfo | None:
        fields = {"consumerGroup": group, "clientId": client_id, "jstackEnable": "false"}
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
        try:
            answer = await channel.invoke(request, CALL_TIMEOUT_S)
            if answer.code != ResponseCode.SUCCESS:
                return None
            return decode_body(ConsumerRunningInfo, answer.body or b"{}")
        except (RemotingError, RequestError, OSError) as exc:
            log.debug("running info of %s in %s: %s", client_id, group, exc)
            return None

    def _lags(self, answers: dict[tuple[str, str], ConsumerRunningInfo]) -> dict[ClientKey, Lag]:
        store, broker_name = self.broker.store, self.broker.config.broker_name
        lags: dict[ClientKey, Lag] = {}
        for (group, client_id), running in answers.items():
            for mq, process_queue in running.mq_table.items():
                if mq.broker_name != broker_name:
                    continue
                queue = store.consume_queues.find(mq.topic, mq.queue_id)
                if queue is None:
                    continue
                lag = queue_lag(
                    client_offset(process_queue),
                    queue.min_queue_offset,
                    queue.max_queue_offset,
                    lambda at, t=mq.topic, q=mq.queue_id: store.get_message_store_timestamp(
                        t, q, at
                    ),
                )
                key = (group, mq.topic, client_id)
                lags[key] = lags.get(key, NO_LAG).merge(lag)
        return lags
