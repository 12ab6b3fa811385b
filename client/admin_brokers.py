"""AdminClient's broker- and NameServer-wide operations (a mixin): every topic and group a
broker holds (what exportMetadata and getConsumerConfig read), store maintenance on demand
(cleanExpiredCQ, deleteExpiredCommitLog, cleanUnusedTopic), the producers a broker knows, and
the NameServers' KV and runtime configuration."""

from __future__ import annotations

from typing import Any

from client.errors import MQBrokerError, MQClientError
from remoting import constants as K
from remoting import fastjson, properties
from remoting.body import (
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
)
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body

# Groups Apache's admin leaves out of "user" groups (DefaultMQAdminExtImpl.SYSTEM_GROUP_SET),
# besides every CID_RMQ_SYS_* group.
SYSTEM_GROUPS = frozenset(
    {
        "DEFAULT_CONSUMER",
        K.DEFAULT_PRODUCER_GROUP,
        K.TOOLS_CONSUMER_GROUP,
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        K.CLIENT_INNER_PRODUCER_GROUP,
        "SELF_TEST_P_GROUP",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
        K.TRANS_CHECK_GROUP,
    }
)
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_GROUP_PREFIX)


class BrokerAdmin:
    """Mixed into AdminClient, whose plumbing (_ok, _req, instance) it uses."""

    # ------------------------------------------------------------------ metadata

    async def all_topic_config(self, addr: str) -> dict[str, TopicConfig]:
        response = await self._ok(addr, self._req(RequestCode.GET_ALL_TOPIC_CONFIG), 10)
        return decode_body(TopicConfigSerializeWrapper, response.body).topic_config_table

    async def user_topic_config(self, addr: str, *, special: bool) -> dict[str, TopicConfig]:
        """The broker's topics without system topics and, unless ``special``, without retry
        and dead-letter topics (Apache's getUserTopicConfig)."""
        table = await self.all_topic_config(addr)
        response = await self._ok(addr, self._req(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER))
        system = set(decode_body(TopicList, response.body).topic_list)
        prefixes = (K.RETRY_GROUP_TOPIC_PREFIX, K.DLQ_GROUP_TOPIC_PREFIX)
        return {
            name: config
            for name, config in table.items()
            if name not in system and (special or not name.startswith(prefixes))
        }

    async def all_sub_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        response = await self._ok(addr, self._req(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), 10)
        return decode_body(SubscriptionGroupWrapper, response.body).subscription_group_table

    async def user_sub_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        groups = await self.all_sub_groups(addr)
        return {name: c for name, c in groups.items() if not is_system_group(name)}

    # ------------------------------------------------------------------ maintenance

    async def _maintain(self, addr: str, code: int) -> bool:
        """One of the store maintenance requests; True when the broker did it."""
        response = await self.instance.invoke(addr, self._req(code), 10)
        if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            raise MQBrokerError(response.code, response.remark, addr)
        return response.code == ResponseCode.SUCCESS

    async def clean_expired_consume_queue(self, addr: str) -> bool:
        return await self._maintain(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)

    async def delete_expired_commit_log(self, addr: str) -> bool:
        return await self._maintain(addr, RequestCode.DELETE_EXPIRED_COMMITLOG)

    async def clean_unused_topic(self, addr: str) -> bool:
        return await self._maintain(addr, RequestCode.CLEAN_UNUSED_TOPIC)

    async def producer_table(self, addr: str) -> dict[str, list[dict[str, Any]]]:
        """GET_ALL_PRODUCER_INFO: producer group -> its instances (ProducerTableInfo)."""
        response = await self._ok(addr, self._req(RequestCode.GET_ALL_PRODUCER_INFO))
        data = fastjson.loads(bytes(response.body or b"{}")) or {}
        table = data.get("data") or {}
        return {str(group): list(infos or []) for group, infos in table.items()}

    # ------------------------------------------------------------------ NameServers

    async def each_namesrv(
        self, code: int, fields: dict[str, str] | None = None, body: bytes = b""
    ) -> dict[str, RemotingCommand]:
        """The answer of every NameServer (-n), in order; the first refusal stops it."""
        return {
            addr: await self._ok(addr, self._req(code, fields or {}, body))
            for addr in self.instance.config.namesrv_addrs
        }

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """GET_KV_CONFIG from the NameServers (the first that answers); None when unset."""
        request = self._req(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key})
        response = await self.instance.invoke_namesrv(request)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark, "namesrv")
        return response.ext("value")

    async def put_kv_config(self, namespace: str, key: str, value: str) -> list[str]:
        fields = {"namespace": namespace, "key": key, "value": value}
        return list(await self.each_namesrv(RequestCode.PUT_KV_CONFIG, fields))

    async def delete_kv_config(self, namespace: str, key: str) -> list[str]:
        fields = {"namespace": namespace, "key": key}
        return list(await self.each_namesrv(RequestCode.DELETE_KV_CONFIG, fields))

    async def put_order_conf(self, topic: str, conf: str, *, whole_cluster: bool) -> str:
        """The NameServers' ORDER_TOPIC_CONFIG entry of ``topic`` (``broker:queues;...``).
        ``whole_cluster`` replaces it; otherwise ``conf`` (one broker) is merged into it, as
        Apache's createOrUpdateOrderConf."""
        if not whole_cluster:
            old = await self.get_kv_config(K.ORDER_TOPIC_CONFIG_NAMESPACE, topic) or ""
            entries = {item.split(":")[0]: item for item in old.split(";") if item}
            entries[conf.split(":")[0]] = conf
            conf = ";".join(entries.values())
        await self.put_kv_config(K.ORDER_TOPIC_CONFIG_NAMESPACE, topic, conf)
        return conf

    async def update_namesrv_config(
        self, values: dict[str, str], addrs: list[str] | None = None
    ) -> dict[str, str]:
        """UPDATE_NAMESRV_CONFIG on each NameServer, in order, and what each said; the body is
        a properties text, as Java's MixAll.properties2String writes it."""
        body = "".join(f"{k}={v}\n" for k, v in values.items()).encode()
        done = {}
        for addr in addrs or self.instance.config.namesrv_addrs:
            answer = await self._ok(addr, self._req(RequestCode.UPDATE_NAMESRV_CONFIG, {}, body))
            done[addr] = answer.remark or "ok"
        return done

    async def namesrv_configs(self) -> dict[str, dict[str, str]]:
        answers = await self.each_namesrv(RequestCode.GET_NAMESRV_CONFIG)
        return {addr: parse_properties(bytes(r.body or b"")) for addr, r in answers.items()}


def parse_properties(body: bytes) -> dict[str, str]:
    """A properties text (GET_NAMESRV_CONFIG, GET_BROKER_CONFIG) as a dict."""
    try:
        return properties.loads(body.decode("utf-8", "replace"))
    except properties.PropertiesError as exc:
        raise MQClientError(f"unreadable configuration text: {exc}") from None
