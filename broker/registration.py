"""BrokerOuterAPI: registration with every NameServer (docs/spec/namesrv.md §3, §4).

Each NameServer is called concurrently with its own timeout, so one dead NameServer never
delays the others. A slave learns its master's address and HA address from the replies.
"""

from __future__ import annotations

import logging
import zlib

import attrs
import trio

from remoting import constants as K
from remoting.body import KVTable, RegisterBrokerBody, TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.headers import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader
from remoting.serde import decode_body, encode_body, encode_header_fields

log = logging.getLogger(__name__)


def body_crc32(body: bytes) -> int:
    """Java's UtilAll.crc32: CRC32 masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


@attrs.frozen
class RegisterResult:
    namesrv_addr: str
    master_addr: str | None
    ha_server_addr: str | None
    order_topics: dict[str, str] | None  # ORDER_TOPIC_CONFIG, when the NameServer sent it
    fenced: str | None = None  # the NameServer's refusal after a promotion of our slave


@attrs.frozen
class BrokerIdentity:
    cluster_name: str
    broker_name: str
    broker_addr: str
    broker_id: int
    ha_server_addr: str


class BrokerOuterAPI:
    def __init__(self, client: RemotingClient, namesrv_addrs: list[str]) -> None:
        self.client = client
        self.namesrv_addrs = namesrv_addrs

    async def register_all(
        self,
        identity: BrokerIdentity,
        topics: TopicConfigSerializeWrapper,
        timeout_s: float,
    ) -> list[RegisterResult]:
        body = encode_body(RegisterBrokerBody(topic_config_serialize_wrapper=topics))
        header = RegisterBrokerRequestHeader(
            broker_name=identity.broker_name,
            broker_addr=identity.broker_addr,
            cluster_name=identity.cluster_name,
            ha_server_addr=identity.ha_server_addr,
            broker_id=identity.broker_id,
            compressed=False,
            body_crc32=body_crc32(body),
        )
        fields = encode_header_fields(header)
        results: list[RegisterResult] = []

        async def one(addr: str) -> None:
            request = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(fields), body)
            try:
                with trio.fail_after(timeout_s):
                    response = await self.client.invoke(addr, request, timeout_s)
            except (RemotingError, trio.TooSlowError) as exc:
                log.warning("register to name server %s failed: %s", addr, exc)
                return
            if response.code != ResponseCode.SUCCESS and (response.remark or "").startswith(
                K.FENCED_REMARK
            ):
                results.append(RegisterResult(addr, None, None, None, fenced=response.remark))
                return
            if response.code != ResponseCode.SUCCESS:
                log.warning(
                    "name server %s refused the registration: %d %s",
                    addr,
                    response.code,
                    response.remark,
                )
                return
            order = None
            if response.body:
                try:
                    order = decode_body(KVTable, response.body).table
                except RemotingError as exc:
                    log.warning("name server %s sent a bad KVTable: %s", addr, exc)
            results.append(
                RegisterResult(
                    addr, response.ext("masterAddr"), response.ext("haServerAddr"), order
                )
            )

        async with trio.open_nursery() as nursery:
            for addr in self.namesrv_addrs:
                nursery.start_soon(one, addr)
        return results

    async def unregister_all(self, identity: BrokerIdentity, timeout_s: float) -> None:
        fields = encode_header_fields(
            UnRegisterBrokerRequestHeader(
                broker_name=identity.broker_name,
                broker_addr=identity.broker_addr,
                cluster_name=identity.cluster_name,
                broker_id=identity.broker_id,
            )
        )

        async def one(addr: str) -> None:
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(fields))
            try:
                with trio.fail_after(timeout_s):
                    await self.client.invoke(addr, request, timeout_s)
                log.info("unregistered from name server %s", addr)
            except (RemotingError, trio.TooSlowError) as exc:
                log.warning("unregister from name server %s failed: %s", addr, exc)

        async with trio.open_nursery() as nursery:
            for addr in self.namesrv_addrs:
                nursery.start_soon(one, addr)
