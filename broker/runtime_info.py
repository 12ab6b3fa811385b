"""GET_BROKER_RUNTIME_INFO's table (Java's AdminBrokerProcessor.prepareRuntimeInfo): the store's
figures, the broker's version, role and start time, held pulls and waiting pops, and
replication status.

Keys are RocketMQ's where it has them (``mqadmin brokerStatus`` and ``clusterList`` read them);
the ``ha*`` keys, ``pullHeldCount`` and ``popPollingCount`` are ours (RocketMQ 4.x shows no
replication status, nor how many requests wait).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from remoting.codes import CURRENT_VERSION
from remoting.version import CURRENT_VERSION_DESC

if TYPE_CHECKING:
    from broker.ha.client import HAClient
    from broker.ha.service import HAService
    from broker.long_polling import PullRequestHoldService
    from broker.namesrv_registrar import HaState
    from broker.pop.polling import PopLongPollingService
    from broker.store.config import MessageStoreConfig
    from broker.store.message_store import DefaultMessageStore


@attrs.frozen(kw_only=True)
class BrokerRuntimeInfo:
    store: DefaultMessageStore
    store_config: MessageStoreConfig
    pull_hold: PullRequestHoldService
    pop_polling: PopLongPollingService
    ha: HaState
    ha_service: HAService | None
    ha_client: HAClient | None
    boot_timestamp: int
    # More rows, each a function of the moment (auto-failover's controller* rows, election/).
    extra: list[Callable[[], dict[str, str]]] = attrs.Factory(list)

    def table(self) -> dict[str, str]:
        store = self.store
        info = store.runtime_info()
        info.update(
            {
                # The RocketMQ release whose protocol we speak (the version every reply carries,
                # which Java clients gate features on), not a release of rocketmq-trio.
                "brokerVersionDesc": CURRENT_VERSION_DESC,
                "brokerVersion": str(CURRENT_VERSION),
                "bootTimestamp": str(self.boot_timestamp),
                "brokerRole": self.store_config.broker_role.name,
                "msgPutTotalTodayNow": str(store.stats.put_message_times_total),
                "msgGetTotalTodayNow": str(store.stats.get_message_transferred_msg_count),
                "pullHeldCount": str(self.pull_hold.held),
                "popPollingCount": str(self.pop_polling.waiting),
            }
        )
        info.update(self.ha_table())
        for rows in self.extra:
            info.update(rows())
        return info

    def ha_table(self) -> dict[str, str]:
        """Replication status: per-slave acked offset and lag on a master, the master it
        follows on a slave."""
        if self.ha_service is not None:
            service = self.ha_service
            return {
                "haConnectionCount": str(service.connection_count),
                "haPush2SlaveMaxOffset": str(service.push2slave_max_offset),
                "haSlaveDisconnects": str(service.disconnects),
                "haSlaves": json.dumps(service.slaves(), separators=(",", ":")),
            }
        if self.ha_client is not None:
            status = self.ha_client.status()
            return {
                "masterAddr": self.ha.master_addr or "",
                "haMasterAddr": str(status["haMasterAddr"]),
                "haConnected": str(status["connected"]).lower(),
                "haDisconnects": str(status["disconnects"]),
                "haLastChunkMillisAgo": str(status["lastChunkMillisAgo"]),
            }
        return {}
