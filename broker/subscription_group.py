"""SubscriptionGroupManager: consumer group settings (retry queue count, max reconsume
times, consume enable), persisted to ``config/subscriptionGroup.json``."""

from __future__ import annotations

import logging

from broker.persist import ConfigPersistError, JsonConfigFile
from remoting.body import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper
from remoting.serde import encode_body, structure_body

log = logging.getLogger(__name__)

# Groups RocketMQ's broker creates at start-up (MixAll).
SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
)


class SubscriptionGroupManager:
    def __init__(self, file: JsonConfigFile, *, auto_create: bool = True) -> None:
        self.file = file
        self.auto_create = auto_create
        self.data_version = DataVersion()
        self.loaded = False
        self.table: dict[str, SubscriptionGroupConfig] = {
            name: SubscriptionGroupConfig(group_name=name) for name in SYSTEM_GROUPS
        }

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; a new group gets defaults when auto-creation is on."""
        config = self.table.get(group)
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group_name=group)
            self.update(config)
        return config

    def update(self, config: SubscriptionGroupConfig) -> None:
        name = config.group_name
        old = self.table.get(name)
        if old == config:
            return
        self.table[name] = config
        self._changed(name, old)
        log.info("subscription group %s: %s", name, config)

    def delete(self, group: str) -> bool:
        old = self.table.pop(group, None)
        if old is None:
            return False
        self._changed(group, old)
        return True

    def _changed(self, name: str, old: SubscriptionGroupConfig | None) -> None:
        """Written before it is acknowledged; a change that cannot be written is undone and
        refused (ConfigPersistError)."""
        previous = self.data_version
        self.data_version = previous.next_version()
        if not self.loaded:
            return
        try:
            self.file.persist_change(self.encode())
        except ConfigPersistError:
            if old is None:
                self.table.pop(name, None)
            else:
                self.table[name] = old
            self.data_version = previous
            raise

    def wrapper(self) -> SubscriptionGroupWrapper:
        return SubscriptionGroupWrapper(
            subscription_group_table=dict(self.table), data_version=self.data_version
        )

    def encode(self, pretty: bool = True) -> str:
        return encode_body(self.wrapper(), pretty=pretty).decode()

    def load(self) -> None:
        self.loaded = True
        data = self.file.load()
        if data is not None:
            wrapper = structure_body(SubscriptionGroupWrapper, data)
            self.table.update(wrapper.subscription_group_table)
            self.data_version = wrapper.data_version

    async def persist(self) -> None:
        await self.file.persist(self.encode())

    def persist_sync(self) -> None:
        self.file.persist_sync(self.encode())
