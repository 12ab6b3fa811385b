"""The NameServer's request handlers (Java's DefaultRequestProcessor, docs/spec/namesrv.md).

Unknown request codes get no answer at all, as from Java's NameServer. Route replies are
cached per (topic, JSON dialect) and dropped whenever the route tables change: routes are
read far more often than brokers register.
"""

from __future__ import annotations

import logging
import zlib
from pathlib import Path
from typing import Any

import attrs

from namesrv.config import NamesrvConfig, config_lines
from namesrv.config_update import NamesrvConfigUpdater
from namesrv.kv_config import KVConfigManager
from namesrv.register_body import RegisterBodyError, decode_register_body
from namesrv.route_info import BrokerRegistration, RouteInfoManager
from remoting import constants as K
from remoting import properties
from remoting.body import DataVersion, KVTable, TopicList
from remoting.codes import V4_9_4, RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.errors import RequestError
from remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from remoting.runtime_config import BlackListedKeys
from remoting.serde import check_body, decode_body, decode_header, encode_body
from remoting.settings import ConfigError

log = logging.getLogger(__name__)


def _not_written(request: RemotingCommand, path: Path, exc: OSError) -> RemotingCommand:
    return request.error_response(
        ResponseCode.SYSTEM_ERROR,
        f"cannot write {path} ({exc.strerror or exc}): the disk may be full or failing. "
        "Nothing was changed",
    )


class NamesrvProcessor:
    def __init__(
        self,
        config: NamesrvConfig,
        routes: RouteInfoManager,
        kv: KVConfigManager,
        updater: NamesrvConfigUpdater | None = None,
    ) -> None:
        self.config = config
        self.routes = routes
        self.kv = kv
        self.updater = updater or NamesrvConfigUpdater(config, {}, None)
        self._route_cache: dict[tuple[str, bool], bytes] = {}
        self._cache_generation = -1

    def handlers(self) -> dict[int, Any]:
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv,
            RequestCode.GET_KV_CONFIG: self.get_kv,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.kv_list,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.route_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.all_topics,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.system_topics,
            RequestCode.GET_UNIT_TOPIC_LIST: self.unit_topics,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.unit_sub_topics,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.unit_sub_ununit_topics,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
        }

    # ------------------------------------------------------------------------ KV

    async def put_kv(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(PutKVConfigRequestHeader, request.ext_fields)
        try:
            await self.kv.put(header.namespace, header.key, header.value)
        except OSError as exc:
            return _not_written(request, self.kv.path, exc)
        self._route_cache.clear()  # routes carry the order-topic entries
        return request.make_response()

    def get_kv(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetKVConfigRequestHeader, request.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return request.error_response(
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return request.make_response(ext_fields={"value": value})

    async def delete_kv(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(DeleteKVConfigRequestHeader, request.ext_fields)
        try:
            deleted = await self.kv.delete(header.namespace, header.key)
        except OSError as exc:
            return _not_written(request, self.kv.path, exc)
        if deleted:
            self._route_cache.clear()
        return request.make_response()

    def kv_list(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetKVListByNamespaceRequestHeader, request.ext_fields)
        table = self.kv.namespace(header.namespace)
        if table is None:
            return request.error_response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
            )
        return request.make_response(body=encode_body(KVTable(table=table)))

    # ------------------------------------------------------------------------ brokers

    def query_data_version(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(QueryDataVersionRequestHeader, request.ext_fields)
        version = decode_body(DataVersion, request.body)
        changed = self.routes.is_broker_topic_config_changed(header.broker_addr, version)
        if not changed:
            self.routes.touch(header.broker_addr)
        live = self.routes.broker_live_table.get(header.broker_addr)
        body = encode_body(live.data_version) if live is not None else b""
        return request.make_response(
            ext_fields={"changed": "true" if changed else "false"}, body=body
        )

    def register_broker(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(RegisterBrokerRequestHeader, request.ext_fields)
        body = bytes(request.body)
        if header.body_crc32 and zlib.crc32(body) & 0x7FFFFFFF != header.body_crc32:
            return request.error_response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        try:
            parsed = decode_register_body(
                body, compressed=header.compressed, version=request.version
            )
        except RegisterBodyError as exc:
            raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        for config in parsed.topic_config_serialize_wrapper.topic_config_table.values():
            check_body(config)  # queue numbers and perm: clients loop over the queues
        check_body(parsed.topic_config_serialize_wrapper.data_version)  # stateVersion
        fenced_to = self.kv.get(K.FENCE_NAMESPACE, header.broker_name)
        if fenced_to and header.broker_id == K.MASTER_ID and header.broker_addr != fenced_to:
            log.warning(
                "refusing %s as master of %s: fenced to %s",
                header.broker_addr,
                header.broker_name,
                fenced_to,
            )
            return request.error_response(
                ResponseCode.SYSTEM_ERROR,
                f"{K.FENCED_REMARK}: {header.broker_name}'s master is {fenced_to} since a "
                f"promotion; {header.broker_addr} may only rejoin as a slave (brokerId > 0, "
                "brokerRole=SLAVE, fresh store)",
            )
        result = self.routes.register_broker(
            BrokerRegistration(
                cluster_name=header.cluster_name,
                broker_addr=header.broker_addr,
                broker_name=header.broker_name,
                broker_id=header.broker_id,
                ha_server_addr=header.ha_server_addr,
                topics=parsed.topic_config_serialize_wrapper,
                filter_servers=parsed.filter_server_list,
                channel=connection,
            )
        )
        ext = {}
        if result.master_addr is not None:
            ext = {"masterAddr": result.master_addr, "haServerAddr": result.ha_server_addr or ""}
        order = self.kv.namespace(K.ORDER_TOPIC_CONFIG_NAMESPACE)
        out = encode_body(KVTable(table=order)) if order else b""
        return request.make_response(ext_fields=ext, body=out)

    def unregister_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(UnRegisterBrokerRequestHeader, request.ext_fields)
        self.routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        return request.make_response()

    def wipe_write_perm(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(WipeWritePermOfBrokerRequestHeader, request.ext_fields)
        count = self.routes.set_write_perm(header.broker_name, wipe=True)
        return request.make_response(ext_fields={"wipeTopicCount": str(count)})

    def add_write_perm(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(AddWritePermOfBrokerRequestHeader, request.ext_fields)
        count = self.routes.set_write_perm(header.broker_name, wipe=False)
        return request.make_response(ext_fields={"addTopicCount": str(count)})

    # ------------------------------------------------------------------------ routes

    def route_by_topic(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetRouteInfoRequestHeader, request.ext_fields)
        standard = bool(header.accept_standard_json_only) or request.version >= V4_9_4
        if self._cache_generation != self.routes.generation:
            self._route_cache.clear()
            self._cache_generation = self.routes.generation
        key = (header.topic, standard)
        body = self._route_cache.get(key)
        if body is None:
            route = self.routes.pickup_topic_route_data(header.topic)
            if route is None:
                return request.error_response(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"No topic route info in name server for the topic: {header.topic}\n"
                    "See http://rocketmq.apache.org/docs/faq/ for further details.",
                )
            if self.config.order_message_enable:
                conf = self.kv.get(K.ORDER_TOPIC_CONFIG_NAMESPACE, header.topic)
                if conf is not None:
                    route = attrs.evolve(route, order_topic_conf=conf)
            body = encode_body(route, standard=standard)
            self._route_cache[key] = body
        return request.make_response(body=body)

    def cluster_info(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=encode_body(self.routes.cluster_info()))

    def _topic_list(self, request: RemotingCommand, topics: list[str]) -> RemotingCommand:
        return request.make_response(body=encode_body(TopicList(topic_list=topics)))

    def all_topics(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.all_topics())

    def delete_topic(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(DeleteTopicFromNamesrvRequestHeader, request.ext_fields)
        self.routes.delete_topic(header.topic, header.cluster_name)
        return request.make_response()

    def topics_by_cluster(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(GetTopicsByClusterRequestHeader, request.ext_fields)
        return self._topic_list(request, self.routes.topics_by_cluster(header.cluster))

    def system_topics(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        topics, addr = self.routes.system_topics()
        body = encode_body(TopicList(topic_list=topics, broker_addr=addr))
        return request.make_response(body=body)

    def unit_topics(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.topics_with_flag(unit=True, unit_sub=None))

    def unit_sub_topics(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.topics_with_flag(unit=None, unit_sub=True))

    def unit_sub_ununit_topics(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return self._topic_list(request, self.routes.topics_with_flag(unit=False, unit_sub=True))

    def get_config(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body="\n".join(config_lines(self.config)).encode())

    async def update_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """The body is ``key=value`` lines; see namesrv/config_update.py."""
        log.info("updateConfig called by %s", connection.peer)
        try:
            changes = properties.loads(bytes(request.body or b"").decode("utf-8"))
        except (UnicodeDecodeError, properties.PropertiesError) as exc:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, f"string2Properties error: {exc}"
            )
        if not changes:
            return request.make_response()
        try:
            update = await self.updater.update(changes)
        except BlackListedKeys as exc:
            return request.error_response(ResponseCode.NO_PERMISSION, str(exc))
        except ConfigError as exc:
            return request.error_response(ResponseCode.SYSTEM_ERROR, str(exc))
        except OSError as exc:
            return _not_written(request, self.updater.path, exc)
        parts = []
        if update.live:
            parts.append(f"applied: {', '.join(update.live)}")
        if update.at_restart:
            parts.append(f"stored, applied at the next start: {', '.join(update.at_restart)}")
        return request.make_response(remark="; ".join(parts) or None)
