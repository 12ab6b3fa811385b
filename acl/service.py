"""PlainAclService: the ACL rules in force for one process, kept in step with the ACL files.

Java's FileWatchService re-reads the watched files every 500 ms and reloads one whose content
hash changed; so do we, from a Trio task (reads and hashing in a worker thread). A file that
no longer parses keeps its previous rules in force: the error (file, line, reason) is logged
once per bad version. The admin requests (broker/processor/acl_admin.py) edit the files here,
under the same lock as the watch, and apply the result at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from acl.config import AclFile, FileVersion, parse_acl_file
from acl.edits import (
    AccountUpdate,
    AclEditError,
    delete_account,
    set_global_white,
    update_account,
)
from acl.errors import AclConfigError
from acl.files import ACL_DIR, FileText, list_acl_files, read_acl_file, write_acl_file
from acl.rules import AclRules, build_rules

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.5


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.frozen
class LoadedFile:
    text: str
    digest: bytes
    parsed: AclFile
    loaded_ms: int


@attrs.frozen
class AccountView:
    """An account as GET_BROKER_CLUSTER_ACL_CONFIG shows it: never its secret key."""

    access_key: str
    white_remote_address: str | None
    admin: bool
    default_topic_perm: str | None
    default_group_perm: str | None
    topic_perms: list[str]
    group_perms: list[str]


ScanResult = list[tuple[Path, FileText | AclConfigError]]


class PlainAclService:
    name = "acl"

    def __init__(
        self,
        home: Path,
        default_file: Path,
        *,
        poll_interval_s: float = POLL_INTERVAL_S,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.default_file = default_file
        self.acl_dir = home / ACL_DIR
        self.poll_interval_s = poll_interval_s
        self.clock = clock
        self.rules = AclRules()
        self.owners: dict[str, str] = {}  # accessKey -> the file defining it
        self.loaded: dict[Path, LoadedFile] = {}
        self.reloads = 0
        self._reported: dict[Path, str] = {}  # the refusal last logged per file
        self._lock = trio.Lock()

    # ------------------------------------------------------------------ start and watch

    def load(self) -> None:
        """Read every file at start (blocking); AclConfigError if one is missing or bad: a
        process asked to check requests does not start without rules."""
        if not self.default_file.is_file():
            raise AclConfigError(
                f"{self.default_file}: no such file (aclEnable=true reads the accounts there; "
                "see conf/plain_acl.yml for the format)"
            )
        for path in list_acl_files(self.acl_dir, self.default_file):
            self._accept(read_acl_file(path))
        self._rebuild()
        log.info(
            "ACL on: %d accounts, %d global white-list patterns, from %s",
            len(self.rules.accounts),
            len(self.rules.global_white),
            ", ".join(str(p) for p in self.loaded),
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(self.poll_interval_s)
            async with self._lock:
                await self.poll()

    async def poll(self) -> bool:
        """One look at the files; True when the rules changed. Callers hold the lock."""
        results = await trio.to_thread.run_sync(self._scan)
        changed = False
        present = {path for path, _ in results}
        for path in [p for p in self.loaded if p not in present and p != self.default_file]:
            del self.loaded[path]
            log.info("ACL file %s is gone: its accounts are removed", path)
            changed = True
        for path, item in results:
            if isinstance(item, AclConfigError):
                self._report(path, str(item))
                continue
            old = self.loaded.get(path)
            if old is not None and old.digest == item.digest:
                continue
            try:
                self._accept(item)
            except AclConfigError as exc:
                self._report(path, str(exc))
                continue
            self._reported.pop(path, None)
            changed = True
        if changed:
            self._rebuild()
            self.reloads += 1
            log.info("ACL reloaded: %d accounts", len(self.rules.accounts))
        return changed

    def _scan(self) -> ScanResult:
        try:
            paths = list_acl_files(self.acl_dir, self.default_file)
        except AclConfigError as exc:
            return [(self.acl_dir, exc)] + [(p, self._read(p)) for p in self.loaded]
        return [(path, self._read(path)) for path in paths]

    @staticmethod
    def _read(path: Path) -> FileText | AclConfigError:
        try:
            return read_acl_file(path)
        except AclConfigError as exc:
            return exc

    def _accept(self, item: FileText) -> None:
        parsed = parse_acl_file(item.text, str(item.path))
        for warning in parsed.warnings:
            log.warning("ACL file: %s", warning)
        self.loaded[item.path] = LoadedFile(item.text, item.digest, parsed, self.clock())

    def _report(self, path: Path, reason: str) -> None:
        if self._reported.get(path) != reason:
            self._reported[path] = reason
            log.error("ACL file refused, the previous rules stay in force: %s", reason)

    def _rebuild(self) -> None:
        self.rules, self.owners = build_rules([(str(p), f.parsed) for p, f in self.loaded.items()])

    # ------------------------------------------------------------------ admin edits

    async def update_account(self, update: AccountUpdate) -> None:
        async with self._lock:
            path = Path(self.owners.get(update.access_key, self.default_file))
            await self._edit(
                path, lambda text, n, now: update_account(text, str(path), update, n, now)
            )

    async def delete_account(self, access_key: str) -> bool:
        async with self._lock:
            owner = self.owners.get(access_key)
            if owner is None:
                return False
            path = Path(owner)
            return await self._edit(
                path, lambda text, n, now: delete_account(text, str(path), access_key, n, now)
            )

    async def update_global_white(self, addresses: list[str], file: str | None) -> None:
        async with self._lock:
            path = self._known(Path(file)) if file else self.default_file
            if path is None:
                raise AclEditError(f"{file} is not one of this process's ACL files")
            await self._edit(
                path, lambda text, n, now: set_global_white(text, str(path), addresses, n, now)
            )

    def _known(self, path: Path) -> Path | None:
        """One of the loaded files, however ``path`` spells it; never any other file."""
        wanted = path.resolve()
        return next((p for p in self.loaded if p.resolve() == wanted), None)

    async def _edit(
        self, path: Path, change: Callable[[str, int, int], tuple[str, AclFile] | None]
    ) -> bool:
        """Apply ``change`` to the file as it is on disk now and write the result; OSError
        (ENOSPC, EIO) and AclEditError leave file and rules as they were."""
        try:
            current = await trio.to_thread.run_sync(read_acl_file, path)
            counter = parse_acl_file(current.text, str(path)).data_version.counter
        except AclConfigError as exc:
            raise AclEditError(f"fix the file first: {exc}") from None
        result = change(current.text, counter, self.clock())
        if result is None:
            return False
        text, parsed = result
        digest = await trio.to_thread.run_sync(write_acl_file, path, text)
        self.loaded[path] = LoadedFile(text, digest, parsed, self.clock())
        self._reported.pop(path, None)
        self._rebuild()
        log.info("ACL file %s changed by an admin request", path)
        return True

    # ------------------------------------------------------------------ views

    def version_of(self, path: Path) -> FileVersion:
        """A file's dataVersion; one without sets the time we loaded it, as Java's does."""
        loaded = self.loaded[path]
        version = loaded.parsed.data_version
        return version if version != FileVersion() else FileVersion(0, loaded.loaded_ms)

    def versions(self) -> dict[str, FileVersion]:
        return {str(path): self.version_of(path) for path in self.loaded}

    def white_addresses(self) -> list[str]:
        return [a for f in self.loaded.values() for a in f.parsed.global_white_remote_addresses]

    def account_views(self) -> list[AccountView]:
        seen: set[str] = set()
        out = []
        for loaded in self.loaded.values():
            for a in loaded.parsed.accounts:
                if a.access_key in seen:
                    continue
                seen.add(a.access_key)
                out.append(
                    AccountView(
                        a.access_key,
                        a.white_remote_address,
                        a.admin,
                        a.default_topic_perm,
                        a.default_group_perm,
                        list(a.topic_perms),
                        list(a.group_perms),
                    )
                )
        return out
