"""The broker's side of ACL (acl/): the rules it checks requests against (aclEnable), the
account it signs its own requests with (accessKey/secretKey, ours), the store look-up the
VIEW_MESSAGE_BY_ID check needs, and the warning for a broker open to anyone."""

from __future__ import annotations

import logging
from pathlib import Path

from acl.credentials import SessionCredentials
from acl.errors import AclConfigError
from acl.files import resolve_acl_file
from acl.service import PlainAclService
from broker.config import BrokerConfig
from broker.store.message_store import DefaultMessageStore
from remoting import message as codec

log = logging.getLogger(__name__)


def load_acl(config: BrokerConfig) -> PlainAclService | None:
    """The ACL rules, read now so a missing or bad file stops start-up (AclConfigError)."""
    if not config.acl_enable:
        return None
    home = Path(config.rocketmq_home)
    service = PlainAclService(home, resolve_acl_file(home, config.plain_acl_file))
    service.load()
    return service


def broker_credentials(config: BrokerConfig) -> SessionCredentials | None:
    if bool(config.access_key) != bool(config.secret_key):
        raise AclConfigError("broker.conf: accessKey and secretKey must be set together")
    if config.access_key and config.secret_key:
        return SessionCredentials(config.access_key, config.secret_key)
    return None


class StoredTopics:
    """acl.table.MessageLookup over the store: the topic of the message at an offset."""

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    def topic_at(self, phys_offset: int) -> str | None:
        record = self.store.look_message_by_offset(phys_offset) if phys_offset >= 0 else None
        if record is None:
            return None
        try:
            return codec.decode_message(record, decompress=False).topic
        except codec.MessageDecodeError:
            return None


def warn_if_open(config: BrokerConfig, acl_on: bool, bind_host: str) -> None:
    if not acl_on and bind_host != "127.0.0.1":
        log.warning(
            "aclEnable=false and the broker listens on every interface (port %d): anyone who "
            "can reach it can read, change and delete messages, topics, groups, offsets and "
            "broker config. Turn on ACL (aclEnable=true, conf/plain_acl.yml) or limit who can "
            "reach the port.",
            config.listen_port,
        )
