"""MQClientInstance: what producers, consumers and admin tools share: the NameServer list, route
tables, broker connections, heartbeats, and answers to the broker's own requests.

NameServer choice is RocketMQ's: start at a random one and stick to it until it fails. Routes are
refreshed every ``poll_name_server_interval`` and on demand; heartbeats go to every broker of a
known route every ``heartbeat_broker_interval``.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import attrs
import trio

from acl.credentials import SessionCredentials
from client.errors import MQClientError, sole_exception
from client.route import all_broker_addrs
from remoting import constants as K
from remoting.body import ConsumerData, HeartbeatData, ProducerData, TopicRouteData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.serde import decode_body, encode_body

log = logging.getLogger(__name__)

NAMESRV_TIMEOUT_S = 3.0


def local_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


@attrs.frozen
class ClientConfig:
    namesrv_addr: str
    instance_name: str = attrs.Factory(lambda: str(os.getpid()))
    client_ip: str = attrs.Factory(local_ip)
    poll_name_server_interval: int = 30_000  # ms
    heartbeat_broker_interval: int = 30_000
    persist_consumer_offset_interval: int = 5_000
    request_timeout_ms: int = 3_000
    # ACL: every request is signed with this account (Java's AclClientRPCHook).
    credentials: SessionCredentials | None = None
    # TLS to NameServers and brokers (Java's useTLS); remoting.tls.client_context makes one
    # from RocketMQ's tls.client.* keys, or pass any client-side ssl.SSLContext.
    ssl_context: ssl.SSLContext | None = None

    @property
    def client_id(self) -> str:
        return f"{self.client_ip}@{self.instance_name}"

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]


def _hint(failure: Exception | None, *, tls: bool) -> str:
    """What to check when no NameServer answered."""
    text = str(failure)
    if "TLS handshake failed" in text:
        return "does it take TLS (tls.server.mode), and do the certificates match?"
    if " closed: " in text:  # it accepted, then closed: a server that takes only TLS does
        if tls:
            return "does it want a client certificate (tls.client.certPath)?"
        return "does it take only TLS (tls.server.mode=enforcing)? Then use TLS (mqadmin --tls)"
    return "is mqnamesrv running there, and is that the address (namesrvAddr, -n)?"


class Member(Protocol):
    """A producer or consumer registered with the instance."""

    def heartbeat_data(self) -> ProducerData | ConsumerData: ...

    def topics(self) -> set[str]: ...


class MQClientInstance:
    def __init__(self, config: ClientConfig, remoting: RemotingClient) -> None:
        if not config.namesrv_addrs:
            raise MQClientError("no NameServer address: set namesrvAddr (host:port;host:port)")
        self.config = config
        self.remoting = remoting
        self.routes: dict[str, TopicRouteData] = {}
        self.members: list[Member] = []
        self._namesrv_index = random.randrange(len(config.namesrv_addrs))
        self.route_listeners: list[Callable[[str, TopicRouteData], None]] = []
        self._heartbeat_now = trio.Event()
        self._heartbeated: set[str] = set()

    @classmethod
    @asynccontextmanager
    async def open(cls, config: ClientConfig) -> AsyncIterator[MQClientInstance]:
        try:
            signer = config.credentials.sign if config.credentials is not None else None
            async with (
                RemotingClient.open(
                    before_request=signer, ssl_context=config.ssl_context
                ) as remoting,
                trio.open_nursery() as nursery,
            ):
                instance = cls(config, remoting)
                nursery.start_soon(instance._route_loop)
                nursery.start_soon(instance._heartbeat_loop)
                try:
                    yield instance
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # Our nurseries wrap whatever the caller's block (or a client's start) raised:
            # hand back the one exception there was, so `except MQClientError` works.
            sole = sole_exception(group)
            if sole is None:
                raise
            raise sole from None

    @property
    def client_id(self) -> str:
        return self.config.client_id

    def register_server_request(self, code: int, handler: Callable[..., Any]) -> None:
        self.remoting.register(code, handler)

    # ------------------------------------------------------------------ calls

    @staticmethod
    def request(
        code: int, fields: dict[str, str] | None = None, body: bytes = b"", *, oneway: bool = False
    ) -> RemotingCommand:
        return RemotingCommand.request(code, fields or {}, body, oneway=oneway, language="PYTHON")

    async def invoke(
        self, addr: str, command: RemotingCommand, timeout_s: float | None = None
    ) -> RemotingCommand:
        timeout = timeout_s if timeout_s is not None else self.config.request_timeout_ms / 1000
        return await self.remoting.invoke(addr, command, timeout)

    async def invoke_oneway(self, addr: str, command: RemotingCommand) -> None:
        await self.remoting.invoke_oneway(addr, command)

    async def invoke_namesrv(self, command: RemotingCommand) -> RemotingCommand:
        """Current NameServer first; on failure the next one, which then becomes current."""
        addrs = self.config.namesrv_addrs
        last: Exception | None = None
        for attempt in range(len(addrs)):
            index = (self._namesrv_index + attempt) % len(addrs)
            try:
                response = await self.invoke(addrs[index], command, NAMESRV_TIMEOUT_S)
            except (RemotingError, OSError) as exc:
                last = exc
                continue
            self._namesrv_index = index
            return response
        hint = _hint(last, tls=self.config.ssl_context is not None)
        raise MQClientError(f"no NameServer answered ({';'.join(addrs)}): {last}; {hint}")

    # ------------------------------------------------------------------ routes

    async def fetch_route(self, topic: str) -> TopicRouteData | None:
        """The NameServer's route for ``topic`` (None if it has none); cached when found."""
        response = await self.invoke_namesrv(
            self.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        )
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise MQClientError(f"route of {topic}: code {response.code} {response.remark}")
        route = decode_body(TopicRouteData, response.body)
        old = self.routes.get(topic)
        self.routes[topic] = route
        if all_broker_addrs(route) - self._heartbeated:
            # A broker we never heartbeated: tell it about us soon (a transaction check-back or a
            # consumer list needs it), not in 30 s.
            self._heartbeat_now.set()
        if old != route:
            for listener in self.route_listeners:
                listener(topic, route)
        return route

    async def route(self, topic: str) -> TopicRouteData | None:
        route = self.routes.get(topic)
        return route if route is not None else await self.fetch_route(topic)

    def topics(self) -> set[str]:
        out = set(self.routes)
        for member in self.members:
            out |= member.topics()
        return out

    async def refresh_routes(self) -> None:
        for topic in sorted(self.topics()):
            try:
                await self.fetch_route(topic)
            except MQClientError as exc:
                # TBW102 is only routed while some broker auto-creates topics
                level = logging.DEBUG if topic == K.DEFAULT_TOPIC else logging.WARNING
                log.log(level, "route refresh of %s failed: %s", topic, exc)

    async def _route_loop(self) -> None:
        while True:
            await trio.sleep(self.config.poll_name_server_interval / 1000)
            await self.refresh_routes()

    # ------------------------------------------------------------------ heartbeats

    def heartbeat(self) -> HeartbeatData:
        producers, consumers = [], []
        for member in self.members:
            data = member.heartbeat_data()
            (producers if isinstance(data, ProducerData) else consumers).append(data)
        return HeartbeatData(
            client_id=self.client_id, producer_data_set=producers, consumer_data_set=consumers
        )

    def find_master(self, broker_name: str) -> str | None:
        """The master of a broker group from any known route (Java's brokerAddrTable): a topic
        sent through TBW102 has no route of its own yet, but its broker is known."""
        for route in self.routes.values():
            for data in route.broker_datas:
                if data.broker_name == broker_name and 0 in data.broker_addrs:
                    return data.broker_addrs[0]
        return None

    def broker_addrs(self) -> set[str]:
        addrs: set[str] = set()
        for route in self.routes.values():
            addrs |= all_broker_addrs(route)
        return addrs

    async def send_heartbeat(self) -> None:
        if not self.members:
            return
        body = encode_body(self.heartbeat())
        for addr in sorted(self.broker_addrs()):
            self._heartbeated.add(addr)
            try:
                response = await self.invoke(addr, self.request(RequestCode.HEART_BEAT, body=body))
                if response.code != ResponseCode.SUCCESS:
                    log.warning("heartbeat to %s: %s %s", addr, response.code, response.remark)
            except (RemotingError, OSError) as exc:
                log.info("heartbeat to %s failed: %s", addr, exc)

    async def _heartbeat_loop(self) -> None:
        while True:
            with trio.move_on_after(self.config.heartbeat_broker_interval / 1000):
                await self._heartbeat_now.wait()
            self._heartbeat_now = trio.Event()
            await self.send_heartbeat()

    async def unregister(self, producer_group: str | None, consumer_group: str | None) -> None:
        fields = {"clientID": self.client_id}
        if producer_group:
            fields["producerGroup"] = producer_group
        if consumer_group:
            fields["consumerGroup"] = consumer_group
        for addr in sorted(self.broker_addrs()):
            try:
                await self.invoke(addr, self.request(RequestCode.UNREGISTER_CLIENT, fields), 1.0)
            except (RemotingError, OSError):
                pass
