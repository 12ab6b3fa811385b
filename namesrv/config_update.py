"""UPDATE_NAMESRV_CONFIG (``mqadmin updateNamesrvConfig -k key -v value``): namesrv.conf keys
changed on a running NameServer, validated exactly as a start with them would be, and the
runtime file that keeps them across restarts.

As in RocketMQ, keys on the black list (``configBlackList``, ``configStorePath``,
``kvConfigPath``, ``rocketmqHome`` and whatever ``configBlackList`` adds) are refused with
NO_PERMISSION. Unlike RocketMQ, which ignores unknown keys and unparsable values silently, an
unknown key or a bad value is refused naming it, and nothing is applied unless it was written.
Keys read as the NameServer works take effect at once; the others at the next start.

Where the changes are kept (remoting/runtime_config.py): in ``configStorePath`` (default
``namesrv.properties`` beside ``kvConfigPath``), never in the ``-c`` file, and every start
reads that file over the ``-c`` file.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import attrs
import trio

from namesrv.config import (
    IGNORED_KEYS,
    SECRET_KEYS,
    NamesrvConfig,
    load_namesrv_config,
    runtime_config_path,
)
from remoting.runtime_config import (
    RuntimeConfig,
    RuntimeConfigError,
    black_list,
    load_overrides,
    refuse_black_listed,
    write_overrides,
)
from remoting.settings import ConfigError, config_values, keyed_fields

log = logging.getLogger(__name__)

# Java's DefaultRequestProcessor adds these to configBlackList whatever it says.
ALWAYS_BLACK_LISTED = frozenset(
    {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
)
# What the NameServer reads from its config as it works (the rest is taken at start).
LIVE_KEYS = frozenset({"orderMessageEnable", "scanNotActiveBrokerInterval"})


@attrs.frozen
class NamesrvConfigUpdate:
    properties: dict[str, str]  # the NameServer's properties with the changes
    config: NamesrvConfig
    live: list[str]
    at_restart: list[str]


def listed(config: NamesrvConfig) -> frozenset[str]:
    return black_list(config.config_black_list, ALWAYS_BLACK_LISTED)


def plan_update(
    running: NamesrvConfig, current: Mapping[str, str], changes: Mapping[str, str]
) -> NamesrvConfigUpdate:
    """Raises BlackListedKeys, or ConfigError naming the key, the value and the reason."""
    refuse_black_listed(changes, listed(running))
    known = set(keyed_fields(NamesrvConfig))
    unknown = sorted(key for key in changes if key not in known and key not in IGNORED_KEYS)
    if unknown:
        raise ConfigError(f"unknown namesrv config key(s): {', '.join(unknown)}")
    merged = {**current, **changes}
    config = load_namesrv_config(merged, warn=False)
    live = sorted(key for key in changes if key in LIVE_KEYS)
    at_restart = sorted(key for key in changes if key in known and key not in LIVE_KEYS)
    return NamesrvConfigUpdate(merged, config, live, at_restart)


def start_config(
    startup: dict[str, str], config_file: Path | None
) -> tuple[RuntimeConfig, NamesrvConfig]:
    """The config a start uses: the start-up file's (and command line's) keys with the runtime
    file's over them, validated as one. ConfigError (one line, naming the file) otherwise."""
    config = load_namesrv_config(startup)
    path = runtime_config_path(config)
    if config_file is not None and path.resolve() == config_file.resolve():
        raise ConfigError(
            f"bad value for configStorePath={str(path)!r}: that is the -c file, which the name "
            "server never rewrites; name another file (or leave it out: namesrv.properties "
            "beside kvConfigPath)"
        )
    try:
        overrides = load_overrides(path)
    except RuntimeConfigError as exc:
        raise ConfigError(f"configStorePath: {exc}") from None
    for key in sorted(set(overrides) & listed(config)):
        log.warning("%s: %s ignored: the key is on the black list", path, key)
        del overrides[key]
    runtime = RuntimeConfig(path, dict(startup), overrides, config_values(config))
    if not overrides:
        return runtime, config
    try:
        config = load_namesrv_config(runtime.effective, warn=False)
    except ConfigError as exc:
        raise ConfigError(f"{path} (kept by updateNamesrvConfig): {exc}") from None
    config = attrs.evolve(config, config_store_path=path)  # where the file was read
    lines = ", ".join(runtime.layered_lines(SECRET_KEYS))
    log.info("runtime changes read from %s over the start-up file: %s", path, lines)
    return runtime, config


class NamesrvConfigUpdater:
    """The running NameServer's config and runtime file; one update at a time, so that each is
    validated against and written over what the previous one left."""

    def __init__(self, config: NamesrvConfig, runtime: RuntimeConfig) -> None:
        self.config = config
        self.runtime = runtime
        self._lock = trio.Lock()

    @property
    def path(self) -> Path:
        return self.runtime.path

    async def update(self, changes: Mapping[str, str]) -> NamesrvConfigUpdate:
        async with self._lock:
            update = plan_update(self.config, self.runtime.effective, changes)
            overrides = self.runtime.overrides_after(changes, config_values(update.config))
            await trio.to_thread.run_sync(
                write_overrides, self.path, overrides, "mqadmin updateNamesrvConfig"
            )
            self.runtime.overrides = overrides
            keyed = keyed_fields(NamesrvConfig)
            for key in update.live:
                name = keyed[key].name
                object.__setattr__(self.config, name, getattr(update.config, name))
        log.info("config updated: now %s; at the next start %s", update.live, update.at_restart)
        return update
