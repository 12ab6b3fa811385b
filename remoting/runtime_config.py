"""Config keys changed on a running process (UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG), kept
in a file of their own and read over the start-up file at every start.

RocketMQ 4.9.8 writes every key of the running process (comments gone) to ``brokerConfigPath``
/ ``configStorePath``, which its start-up points at the ``-c`` file itself; started without
``-c`` it writes ``~/store/config/broker.properties`` / ``~/namesrv/namesrv.properties`` and
never reads them again. We never rewrite the start-up file: it is the operator's (often in
/etc, which the service user cannot write), and a change made at run time survives a restart
because its key, and only its key, is kept in the runtime file and layered over the start-up
file (and the command line) when the process starts. A key set back to its start-up value
leaves the runtime file, so a later edit of the start-up file takes effect again.

Pure but for ``load_overrides`` and ``write_overrides`` (a worker thread's work).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from remoting import properties
from remoting.atomic_file import read_with_backup, remove_stale_temps, write_atomically

# A runtime change may be a secret (the broker's secretKey): only the service user reads it.
RUNTIME_FILE_MODE = 0o600


class RuntimeConfigError(ValueError):
    """The runtime file cannot be read or parsed; the message names it and says why."""


class BlackListedKeys(ValueError):
    """Java's answer to an update of a black-listed key: NO_PERMISSION."""


def black_list(configured: str, always: frozenset[str]) -> frozenset[str]:
    """Keys an update may not touch: ``configBlackList``'s ';'-separated keys and ``always``."""
    return always | {key.strip() for key in configured.split(";") if key.strip()}


def refuse_black_listed(changes: Mapping[str, str], listed: frozenset[str]) -> None:
    refused = sorted(set(changes) & listed)
    if refused:
        raise BlackListedKeys(f"Can not update config in black list: {', '.join(refused)}")


def load_overrides(path: Path) -> dict[str, str]:
    """The keys kept in ``path``, {} when there is none. A file that does not parse gives way to
    its ``.bak`` (the previous write), as the JSON configs do."""
    remove_stale_temps(path)
    try:
        candidates = read_with_backup(path)
    except OSError as exc:
        raise RuntimeConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    problems = []
    for candidate, text in candidates:
        try:
            return properties.loads(text)
        except properties.PropertiesError as exc:
            problems.append(f"{candidate}: {exc}")
    if problems:
        raise RuntimeConfigError("; ".join(problems))
    return {}


def render(overrides: Mapping[str, str], what: str) -> str:
    header = (
        f"# Changed at run time ({what}) and read over the start-up file at every start.\n"
        "# Written by the running process: change these keys with the same command, or stop\n"
        "# the process before editing. A key set back to its start-up value leaves this file.\n"
    )
    return properties.with_changes(header, overrides)


def write_overrides(path: Path, overrides: Mapping[str, str], what: str) -> None:
    write_atomically(path, render(overrides, what), mode=RUNTIME_FILE_MODE)


@attrs.define
class RuntimeConfig:
    """What a process started from and what changed since. Touched on the event loop only; the
    updater serializes changes and writes the file (write_overrides) in a worker thread before
    it records them here."""

    path: Path
    startup: dict[str, str]  # the -c file and the command line
    overrides: dict[str, str] = attrs.Factory(dict)  # the runtime file's keys
    baseline: dict[str, str] = attrs.Factory(dict)  # every key's start-up value (config_values)

    @property
    def effective(self) -> dict[str, str]:
        return {**self.startup, **self.overrides}

    def overrides_after(
        self, changes: Mapping[str, str], values: Mapping[str, str]
    ) -> dict[str, str]:
        """The runtime file's keys once ``changes`` are made; ``values`` is every key's value
        then (config_values). A key back at its start-up value (the default included) leaves."""
        merged = {**self.overrides, **changes}
        return {
            key: text
            for key, text in merged.items()
            if key not in self.baseline or values.get(key) != self.baseline[key]
        }

    def layered_lines(self, secrets: frozenset[str] = frozenset()) -> list[str]:
        """One line per key the runtime file sets over the start-up file, for the start log
        (a secret's value is never shown)."""
        lines = []
        for key, value in self.overrides.items():
            shown, before = (value, self.startup.get(key)) if key not in secrets else ("***",) * 2
            was = f" (start-up: {before!r})" if key in self.startup else ""
            lines.append(f"{key}={shown!r}{was}")
        return lines
