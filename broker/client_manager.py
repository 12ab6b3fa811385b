"""Producer and consumer groups as the broker sees them (ProducerManager, ConsumerManager).

A client is known by its connection: heartbeats (every 30 s) refresh it, a closed connection
or 120 s of silence removes it. A consumer group's membership change is reported through
``on_group_changed`` so the broker can send NOTIFY_CONSUMER_IDS_CHANGED to every member.

Java keeps one subscription table per group and lets the last heartbeat win, so members that
subscribe differently silently flip the group's filter. We keep that table (pulls use it) and
each member's own subscriptions too, so the disagreement is logged and shown in
GET_CONSUMER_CONNECTION_LIST instead of only being felt as lost messages. A member's first
heartbeat does not count towards the log line: clients send it before they finish subscribing
(ali-ons adds its retry topic ~0.2 s later), so only a disagreement between members that have
each heartbeated twice is logged, once, at WARNING, naming what differs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from remoting.body import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from remoting.java_hash import java_string_hash

log = logging.getLogger(__name__)


@attrs.define(eq=False)
class ClientChannelInfo:
    channel: Any  # remoting.connection.Connection (any hashable for tests)
    client_id: str
    language: str
    version: int
    last_update: int  # ms
    subscriptions: dict[str, str] = attrs.Factory(dict)  # topic -> subString
    heartbeats: int = 1  # heard from this member so far

    @property
    def client_addr(self) -> str:
        return str(getattr(self.channel, "peer", self.channel))


def with_tag_codes(sub: SubscriptionData) -> SubscriptionData:
    """The C++ client sends codeSet all zeros: the broker computes the hash codes itself."""
    codes = {java_string_hash(tag) for tag in sub.tags_set}
    if codes == sub.code_set:
        return sub
    return attrs.evolve(sub, code_set=codes)


@attrs.define(eq=False)
class ConsumerGroupInfo:
    group_name: str
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    channels: dict[Any, ClientChannelInfo] = attrs.Factory(dict)
    subscriptions: dict[str, SubscriptionData] = attrs.Factory(dict)
    last_update: int = 0
    reported_disagreement: tuple[str, ...] = ()  # the last one logged

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]

    def update_channel(self, info: ClientChannelInfo, data: ConsumerData, now: int) -> bool:
        """Record a member's heartbeat; True when the member is new to the group."""
        self.consume_type = data.consume_type
        self.message_model = data.message_model
        self.consume_from_where = data.consume_from_where
        self.last_update = now
        old = self.channels.get(info.channel)
        self.channels[info.channel] = info
        new_member = old is None or old.client_id != info.client_id
        if not new_member:
            info.heartbeats = old.heartbeats + 1
        return new_member

    def update_subscriptions(self, subs: list[SubscriptionData], now: int) -> bool:
        """Java's rule: a newer subVersion replaces, a new topic is added, a topic the latest
        heartbeat no longer names is dropped. True when the table changed."""
        changed = False
        wanted = {sub.topic for sub in subs}
        for sub in subs:
            old = self.subscriptions.get(sub.topic)
            if old is None or sub.sub_version > old.sub_version:
                changed = changed or old is None or old.sub_string != sub.sub_string
                self.subscriptions[sub.topic] = with_tag_codes(sub)
        for topic in [t for t in self.subscriptions if t not in wanted]:
            del self.subscriptions[topic]
            changed = True
        self.last_update = now
        return changed

    def inconsistent_members(self) -> dict[str, dict[str, str]] | None:
        """Each member's subscriptions, when members disagree; None when they all agree."""
        views = {info.client_id: info.subscriptions for info in self.channels.values()}
        distinct = {tuple(sorted(v.items())) for v in views.values()}
        return views if len(distinct) > 1 else None

    def settled_disagreement(self) -> tuple[str, ...]:
        """What members that have heartbeated at least twice disagree on (empty: nothing)."""
        views = {i.client_id: i.subscriptions for i in self.channels.values() if i.heartbeats > 1}
        return describe_disagreement(views)


def describe_disagreement(views: dict[str, dict[str, str]]) -> tuple[str, ...]:
    """One line per topic the members do not all subscribe to the same way, e.g.
    ``T: 'a' by c1, c2; 'b' by c3`` or ``%RETRY%G: not by c3``."""
    lines = []
    for topic in sorted({t for view in views.values() for t in view}):
        by_expression: dict[str, list[str]] = {}
        missing = []
        for client_id, view in sorted(views.items()):
            if topic in view:
                by_expression.setdefault(view[topic], []).append(client_id)
            else:
                missing.append(client_id)
        if len(by_expression) == 1 and not missing:
            continue
        parts = [f"{expr!r} by {', '.join(ids)}" for expr, ids in sorted(by_expression.items())]
        if missing:
            parts.append(f"not by {', '.join(missing)}")
        lines.append(f"{topic}: {'; '.join(parts)}")
    return tuple(lines)


@attrs.define(eq=False)
class ProducerInfo:
    group: str
    info: ClientChannelInfo


class ClientManager:
    def __init__(
        self,
        *,
        clock: Callable[[], int],
        expired_after_ms: int = 120_000,
        on_group_changed: Callable[[str, list[Any]], None] = lambda group, channels: None,
    ) -> None:
        self.clock = clock
        self.expired_after_ms = expired_after_ms
        self.on_group_changed = on_group_changed
        self.consumer_groups: dict[str, ConsumerGroupInfo] = {}
        self.producer_groups: dict[str, dict[Any, ClientChannelInfo]] = {}

    # ------------------------------------------------------------------------ consumers

    def register_consumer(self, info: ClientChannelInfo, data: ConsumerData) -> bool:
        now = self.clock()
        group = self.consumer_groups.get(data.group_name)
        if group is None:
            group = self.consumer_groups[data.group_name] = ConsumerGroupInfo(data.group_name)
        # A copy per group: one client's heartbeat names all its groups with one channel.
        subscriptions = {s.topic: s.sub_string for s in data.subscription_data_set}
        info = attrs.evolve(info, subscriptions=subscriptions)
        new_member = group.update_channel(info, data, now)
        subs_changed = group.update_subscriptions(list(data.subscription_data_set), now)
        self._check_agreement(group)
        if new_member:
            log.info("consumer %s joined group %s", info.client_id, data.group_name)
        if new_member or subs_changed:
            self._notify(group)
        return new_member

    def _check_agreement(self, group: ConsumerGroupInfo) -> None:
        disagreement = group.settled_disagreement()
        if disagreement == group.reported_disagreement:
            return
        if disagreement:
            log.warning(
                "consumer group %s: members subscribe differently, messages will be missed "
                "until they agree: %s",
                group.group_name,
                " | ".join(disagreement),
            )
        else:
            log.info("consumer group %s: members subscribe alike again", group.group_name)
        group.reported_disagreement = disagreement

    def unregister_consumer(self, group_name: str, channel: Any) -> bool:
        group = self.consumer_groups.get(group_name)
        if group is None or group.channels.pop(channel, None) is None:
            return False
        if not group.channels:
            del self.consumer_groups[group_name]
        else:
            self._check_agreement(group)
            self._notify(group)
        return True

    def _notify(self, group: ConsumerGroupInfo) -> None:
        self.on_group_changed(group.group_name, list(group.channels))

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_groups.get(group)
        return None if info is None else info.subscriptions.get(topic)

    def groups_subscribing(self, topic: str) -> set[str]:
        return {name for name, g in self.consumer_groups.items() if topic in g.subscriptions}

    # ------------------------------------------------------------------------ producers

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        self.producer_groups.setdefault(group, {})[info.channel] = info

    def producer_channels(self, group: str) -> list[Any]:
        """Live connections of a producer group, most recently heard first."""
        members = self.producer_groups.get(group, {})
        return [i.channel for i in sorted(members.values(), key=lambda i: -i.last_update)]

    def find_producer_channel(self, client_id: str) -> Any | None:
        """The connection of a producer by client id, in any group (Java's
        ProducerManager.findChannel: where a request-reply answer is pushed)."""
        for members in self.producer_groups.values():
            for info in members.values():
                if info.client_id == client_id:
                    return info.channel
        return None

    def unregister_producer(self, group: str, channel: Any) -> None:
        members = self.producer_groups.get(group)
        if members is not None:
            members.pop(channel, None)
            if not members:
                del self.producer_groups[group]

    # ------------------------------------------------------------------------ housekeeping

    def channel_closed(self, channel: Any) -> None:
        for group in list(self.producer_groups):
            self.unregister_producer(group, channel)
        for name in list(self.consumer_groups):
            if self.unregister_consumer(name, channel):
                log.info("consumer connection %s closed; left group %s", channel, name)

    def scan_expired(self) -> list[Any]:
        """Drop members silent for longer than the expiry; returns their channels so the
        caller can close them (Java closes expired channels too)."""
        deadline = self.clock() - self.expired_after_ms
        expired = []
        for members in list(self.producer_groups.values()):
            expired += [c for c, i in members.items() if i.last_update < deadline]
        for group in list(self.consumer_groups.values()):
            expired += [c for c, i in group.channels.items() if i.last_update < deadline]
        for channel in set(expired):
            log.warning("client channel %s expired (no heartbeat for 120 s)", channel)
            self.channel_closed(channel)
        return list(set(expired))
