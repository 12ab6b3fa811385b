"""Store maintenance an operator asks for, and the producers a broker knows (Apache's
AdminBrokerProcessor serves these among its many codes; they live here to keep admin.py small):

* CLEAN_EXPIRED_CONSUMEQUEUE (``mqadmin cleanExpiredCQ``): now, not at the next clean round,
  drop the ConsumeQueue and index files that only point at CommitLog data already deleted.
  RocketMQ destroys whole queues whose last unit is expired, and forgets their offsets, so the
  next message of such a queue starts again at queue offset 0 behind its consumers; here a
  queue keeps its offsets and only its expired files go.
* DELETE_EXPIRED_COMMITLOG (``mqadmin deleteExpiredCommitLog``): the next 20 clean rounds may
  delete CommitLog files older than ``fileReservedTime`` whatever ``deleteWhen`` says, as
  RocketMQ's executeDeleteFilesManually.
* CLEAN_UNUSED_TOPIC (``mqadmin cleanUnusedTopic``): drop the ConsumeQueues of topics the store
  holds but the topic config does not (the schedule and transaction-op topics stay), as RocketMQ.
* GET_ALL_PRODUCER_INFO (``mqadmin producer``): every producer group's instances, in RocketMQ's
  ProducerTableInfo shape.
* GET_TIMER_CHECK_POINT (5.x): this broker's timer progress in RocketMQ's TimerCheckpoint
  layout (broker/timer/checkpoint.py), which a slave copies; a slave answers the copy it holds.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker.timer import checkpoint
from remoting import constants as K
from remoting import fastjson
from remoting.codes import RequestCode
from remoting.command import RemotingCommand

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)

MANUAL_DELETE_ROUNDS = 20  # Java's MAX_MANUAL_DELETE_FILE_TIMES
KEPT_UNCONFIGURED = frozenset({K.SCHEDULE_TOPIC, K.TRANS_OP_HALF_TOPIC})


class MaintenanceProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, self.clean_expired_consume_queue)
        server.register(RequestCode.DELETE_EXPIRED_COMMITLOG, self.delete_expired_commit_log)
        server.register(RequestCode.CLEAN_UNUSED_TOPIC, self.clean_unused_topic)
        server.register(RequestCode.GET_ALL_PRODUCER_INFO, self.all_producer_info)
        server.register(RequestCode.GET_TIMER_CHECK_POINT, self.timer_check_point)

    def clean_expired_consume_queue(self, connection: Any, request: RemotingCommand):
        log.info("cleanExpiredCQ asked by %s", getattr(connection, "peer", "?"))
        self.broker.store.clean.clean_queues()
        return request.make_response()

    def delete_expired_commit_log(self, connection: Any, request: RemotingCommand):
        log.info("deleteExpiredCommitLog asked by %s", getattr(connection, "peer", "?"))
        self.broker.store.clean.manual_rounds = MANUAL_DELETE_ROUNDS
        return request.make_response()

    def clean_unused_topic(self, connection: Any, request: RemotingCommand):
        store, configured = self.broker.store, self.broker.topics.table
        unused = store.consume_queues.topics() - set(configured) - KEPT_UNCONFIGURED
        if unused:
            queues = store.delete_topics(unused)
            log.info("cleanUnusedTopic: dropped %d queues of %s", queues, sorted(unused))
        return request.make_response()

    def all_producer_info(self, connection: Any, request: RemotingCommand):
        data = {
            group: [
                {
                    "clientId": info.client_id,
                    "remoteIP": info.client_addr,
                    "language": info.language,
                    "version": info.version,
                    "lastUpdateTimestamp": info.last_update,
                }
                for info in members.values()
            ]
            for group, members in sorted(self.broker.clients.producer_groups.items())
        }
        return request.make_response(body=fastjson.dumps({"data": data}).encode())

    def timer_check_point(self, connection: Any, request: RemotingCommand):
        broker = self.broker
        body = checkpoint.encode(broker.timer_progress.checkpoint(broker.clock()))
        return request.make_response(body=body)
