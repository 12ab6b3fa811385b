"""UPDATE_NAMESRV_CONFIG (``mqadmin updateNamesrvConfig -k key -v value``): namesrv.conf keys
changed on a running NameServer, validated exactly as a start with them would be.

As in RocketMQ, keys on the black list (``configBlackList``, ``configStorePath``,
``kvConfigPath``, ``rocketmqHome`` and whatever ``configBlackList`` adds) are refused with
NO_PERMISSION. Unlike RocketMQ, which ignores unknown keys and unparsable values silently and
writes every key to ``configStorePath`` (a file it never reads back), an unknown key or a bad
value is refused naming it, nothing is applied unless it was written, and the changes are
written to the ``-c`` file (comments kept) so that a restart keeps them. Keys read as the
NameServer works take effect at once; the others at the next start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import attrs
import trio

from namesrv.config import IGNORED_KEYS, NamesrvConfig, load_namesrv_config
from remoting import properties
from remoting.settings import ConfigError, keyed_fields

log = logging.getLogger(__name__)

# Java's DefaultRequestProcessor adds these to configBlackList whatever it says.
ALWAYS_BLACK_LISTED = frozenset(
    {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
)
# What the NameServer reads from its config as it works (the rest is taken at start).
LIVE_KEYS = frozenset({"orderMessageEnable", "scanNotActiveBrokerInterval"})


class BlackListedKeys(ValueError):
    """Java's answer: NO_PERMISSION, "Can not update config in black list."."""


@attrs.frozen
class NamesrvConfigUpdate:
    properties: dict[str, str]  # the NameServer's properties with the changes
    config: NamesrvConfig
    live: list[str]
    at_restart: list[str]


def black_list(config: NamesrvConfig) -> frozenset[str]:
    listed = {key.strip() for key in config.config_black_list.split(";") if key.strip()}
    return ALWAYS_BLACK_LISTED | listed


def plan_update(
    running: NamesrvConfig, current: Mapping[str, str], changes: Mapping[str, str]
) -> NamesrvConfigUpdate:
    """Raises BlackListedKeys, or ConfigError naming the key, the value and the reason."""
    refused = sorted(set(changes) & black_list(running))
    if refused:
        raise BlackListedKeys(f"Can not update config in black list: {', '.join(refused)}")
    known = set(keyed_fields(NamesrvConfig))
    unknown = sorted(key for key in changes if key not in known and key not in IGNORED_KEYS)
    if unknown:
        raise ConfigError(f"unknown namesrv config key(s): {', '.join(unknown)}")
    merged = {**current, **changes}
    config = load_namesrv_config(merged, warn=False)
    live = sorted(key for key in changes if key in LIVE_KEYS)
    at_restart = sorted(key for key in changes if key in known and key not in LIVE_KEYS)
    return NamesrvConfigUpdate(merged, config, live, at_restart)


class NamesrvConfigUpdater:
    """The running NameServer's properties and ``-c`` file; one update at a time, so that each
    is validated against and written over what the previous one left."""

    def __init__(
        self, config: NamesrvConfig, current: Mapping[str, str], path: Path | None
    ) -> None:
        self.config = config
        self.properties = dict(current)
        self.path = path
        self._lock = trio.Lock()

    async def update(self, changes: Mapping[str, str]) -> NamesrvConfigUpdate:
        async with self._lock:
            update = plan_update(self.config, self.properties, changes)
            if self.path is not None:
                await trio.to_thread.run_sync(properties.rewrite, self.path, changes)
            keyed = keyed_fields(NamesrvConfig)
            for key in update.live:
                name = keyed[key].name
                object.__setattr__(self.config, name, getattr(update.config, name))
            self.properties = update.properties
        log.info("config updated: now %s; at the next start %s", update.live, update.at_restart)
        return update
