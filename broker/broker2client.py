"""Broker2Client: what the broker tells clients unasked. Here NOTIFY_CONSUMER_IDS_CHANGED, sent
one-way to every member of a consumer group when one joins or leaves, so each rebalances at
once instead of at its next 20 s round (Java's DefaultConsumerIdsChangeListener and
Broker2Client.notifyConsumerIdsChanged)."""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.subscription_group import SubscriptionGroupManager
from remoting.codes import RequestCode
from remoting.command import RemotingCommand


class Broker2Client:
    def __init__(self, config: BrokerConfig, groups: SubscriptionGroupManager) -> None:
        self.config = config  # live: notifyConsumerIdsChangedEnable is read at each change
        self.groups = groups

    def notify_consumer_ids_changed(self, group: str, channels: list[object]) -> None:
        """Off broker-wide or for the group (its subscription group config): nothing is sent."""
        if not self.config.notify_consumer_ids_changed_enable:
            return
        config = self.groups.table.get(group)
        if config is not None and not config.notify_consumer_ids_changed_enable:
            return
        for channel in channels:
            request = RemotingCommand.request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
            )
            channel.send_nowait(request)  # type: ignore[attr-defined]
