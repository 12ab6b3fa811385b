"""The auto-failover keys (broker/election/): a base of BrokerConfig, as TlsKeys and
MetricsKeys are. RocketMQ 5's names where it has the key, with their meaning:
``enableControllerMode``, ``controllerHeartBeatTimeoutMills`` (how long a silent broker counts
as alive: here the TTL of its etcd lease), ``enableElectUncleanMaster`` (a ControllerConfig
key in RocketMQ 5: here every broker of the group reads it). Ours: ``controllerEtcdEndpoints``
(RocketMQ 5 names its own controllers in ``controllerAddr``; ours is etcd) and
``controllerEtcdPrefix``.

In controller mode ``brokerId`` is the member's own id in its group (1 or more, unique), the
role comes from etcd, and ``brokerRole`` only says which kind of master it is when elected.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import attrs

from remoting.settings import java_long


def endpoint_problem(text: str) -> str | None:
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError as exc:
        return f"{text!r} is not a URL: {exc}"
    if url.scheme not in ("http", "https") or not url.hostname or port is None:
        return f"{text!r} is not http(s)://host:port"
    if url.path not in ("", "/") or url.query or url.fragment or url.username:
        return f"{text!r} has more than scheme, host and port"
    return None


def endpoints(value: str | None) -> list[str]:
    return [e.strip() for e in (value or "").split(",") if e.strip()]


def _endpoint_list(_: object, attribute: attrs.Attribute, value: str | None) -> None:
    for entry in endpoints(value):
        problem = endpoint_problem(entry)
        if problem is not None:
            raise ValueError(f"{problem}; expected http://127.0.0.1:2379[,http://host:port...]")


def _prefix(_: object, attribute: attrs.Attribute, value: str) -> None:
    if not value.startswith("/") or len(value) > 200 or any(c.isspace() for c in value):
        raise ValueError("must start with '/', at most 200 characters, no spaces")


# Not slotted: BrokerConfig has TlsKeys (slotted) as a base too.
@attrs.frozen(kw_only=True, slots=False)
class ControllerKeys:
    enable_controller_mode: bool = False
    controller_etcd_endpoints: str | None = attrs.field(default=None, validator=_endpoint_list)
    controller_etcd_prefix: str = attrs.field(default="/rocketmq-trio", validator=_prefix)
    # The lease TTL is this rounded up to seconds; etcd's own minimum is 2 s by default.
    controller_heart_beat_timeout_mills: int = attrs.field(
        default=10_000, validator=java_long(2000, 3_600_000)
    )
    enable_elect_unclean_master: bool = False
    # RocketMQ 5's MessageStoreConfig key: a slave trailing the master by more bytes than this
    # leaves the SyncStateSet (and may not be elected); within it, it joins.
    ha_max_gap_not_in_sync: int = attrs.field(default=256 * 1024 * 1024, validator=java_long(0))

    @property
    def lease_ttl_s(self) -> int:
        return -(-self.controller_heart_beat_timeout_mills // 1000)

    @property
    def etcd_endpoints(self) -> list[str]:
        return endpoints(self.controller_etcd_endpoints)
