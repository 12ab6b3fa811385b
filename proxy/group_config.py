"""The subscription group configs a 5.x consumer's settings are merged with, as RocketMQ 5's
Proxy reads them (ClusterMetadataService: GET_SUBSCRIPTIONGROUP_CONFIG from a broker of its
cluster, cached): ``consumeMessageOrderly`` makes the group FIFO (the SDKs learn it from their
settings, receives pop orderly) and ``retryMaxTimes`` + 1 is its delivery attempts.

``fetch_group_config`` runs in the Trio thread; ``GroupConfigs``, the cache, on the asyncio
side (it awaits whatever fetch it was given, so it is tested without either)."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from client.route import master_addr
from proxy.cluster import ClusterClient
from proxy.errors import ProxyError
from remoting.body import SubscriptionGroupConfig
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.headers import GetSubscriptionGroupConfigRequestHeader
from remoting.serde import decode_body, encode_header_fields

log = logging.getLogger(__name__)

# ProxyConfig's subscriptionGroupConfigCache* defaults: a changed group reaches receives and
# settings within 20 s
REFRESH_S = 20.0
MAX_GROUPS = 20_000

Fetch = Callable[[str], Awaitable[SubscriptionGroupConfig | None]]


async def fetch_group_config(
    cluster: ClusterClient, cluster_name: str, group: str
) -> SubscriptionGroupConfig | None:
    """The group's config from the first master of ``cluster_name`` that answers (the route of
    the topic named after the cluster); None when no broker has it or none answers (the
    settings are then the client's own, as RocketMQ's mergeSubscriptionData with no config)."""
    try:
        route = await cluster.route(cluster_name)
    except ProxyError:
        return None
    header = encode_header_fields(GetSubscriptionGroupConfigRequestHeader(group=group))
    for data in sorted(route.broker_datas, key=lambda d: d.broker_name):
        addr = master_addr(route, data.broker_name)
        if addr is None:
            continue
        request = cluster.instance.request(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, header)
        try:
            response = await cluster.instance.invoke(addr, request, cluster.timeout_s)
            if response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                return None
            if response.code == ResponseCode.SUCCESS:
                return decode_body(SubscriptionGroupConfig, response.body)
        except (RemotingError, OSError, ValueError) as exc:
            log.info("subscription group %s from %s: %r", group, addr, exc)
    return None


class GroupConfigs:
    """Configs by group, fetched again once older than ``refresh_s``; a failed fetch keeps
    the last one known. At most ``max_groups`` (the least recently asked forgotten)."""

    def __init__(
        self,
        fetch: Fetch,
        *,
        refresh_s: float = REFRESH_S,
        max_groups: int = MAX_GROUPS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._refresh_s = refresh_s
        self._max_groups = max_groups
        self._clock = clock
        self._table: OrderedDict[str, tuple[SubscriptionGroupConfig | None, float]] = OrderedDict()

    async def get(self, group: str) -> SubscriptionGroupConfig | None:
        now = self._clock()
        known = self._table.get(group)
        if known is not None and known[1] > now:
            self._table.move_to_end(group)
            return known[0]
        try:
            config = await self._fetch(group)
        except Exception as exc:  # a broker gone or slow: the last config known serves
            log.info("subscription group %s: %r", group, exc)
            return known[0] if known is not None else None
        self._table[group] = (config, now + self._refresh_s)
        self._table.move_to_end(group)
        while len(self._table) > self._max_groups:
            self._table.popitem(last=False)
        return config
