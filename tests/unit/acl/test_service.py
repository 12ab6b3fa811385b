"""PlainAclService: the files as Java finds them, reloads, a bad file keeping the old rules,
and the admin edits written atomically and applied at once."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest
import trio

from acl.edits import AccountUpdate, AclEditError
from acl.errors import AclConfigError
from acl.files import resolve_acl_file
from acl.service import PlainAclService

ONE = "accounts:\n- accessKey: RocketMQ\n  secretKey: '12345678'\n"
TWO = ONE + "- accessKey: rocketmq2\n  secretKey: '87654321'\n  admin: true\n"


def service(home: Path, text: str | None = ONE) -> PlainAclService:
    default = resolve_acl_file(home, None)
    default.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        default.write_text(text)
    return PlainAclService(home, default, clock=lambda: 1_700_000_000_000)


def test_the_default_file_and_the_acl_directory_as_java_finds_them(tmp_path: Path) -> None:
    acl = service(tmp_path)
    (tmp_path / "conf" / "acl" / "team").mkdir(parents=True)
    (tmp_path / "conf" / "acl" / "team" / "a.yml").write_text(
        "accounts:\n- accessKey: teamUser1\n  secretKey: '12345678'\n"
        # defined in the default file too: the first file read keeps it, as in Java
        "- accessKey: RocketMQ\n  secretKey: 'otherone'\n"
    )
    (tmp_path / "conf" / "acl" / "notes.txt").write_text("not an ACL file")
    acl.load()
    assert set(acl.rules.accounts) == {"RocketMQ", "teamUser1"}
    assert acl.owners["RocketMQ"].endswith("a.yml")


def test_start_up_is_refused_without_the_file_or_with_a_bad_one(tmp_path: Path) -> None:
    with pytest.raises(AclConfigError, match="no such file"):
        service(tmp_path, None).load()
    with pytest.raises(AclConfigError, match=r"plain_acl.yml:2: .*secretKey"):
        service(tmp_path, "accounts:\n- accessKey: RocketMQ\n").load()


async def test_a_changed_file_is_reloaded_a_bad_one_keeps_the_old_rules(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    acl = service(tmp_path)
    acl.load()
    assert not await acl.poll()  # nothing changed
    acl.default_file.write_text(TWO)
    assert await acl.poll()
    assert set(acl.rules.accounts) == {"RocketMQ", "rocketmq2"}
    with caplog.at_level(logging.ERROR, logger="acl.service"):
        acl.default_file.write_text(TWO + "  defaultTopicPerm: EVERYTHING\n")
        assert not await acl.poll()
        assert not await acl.poll()  # logged once per bad version
    assert set(acl.rules.accounts) == {"RocketMQ", "rocketmq2"}
    errors = [r.getMessage() for r in caplog.records]
    assert len(errors) == 1 and "plain_acl.yml:7:" in errors[0] and "EVERYTHING" in errors[0]
    acl.default_file.unlink()  # a vanished default file is refused like a bad one
    assert not await acl.poll() and "rocketmq2" in acl.rules.accounts
    acl.default_file.write_text(ONE)
    assert await acl.poll() and set(acl.rules.accounts) == {"RocketMQ"}


async def test_files_added_to_and_removed_from_the_acl_directory(tmp_path: Path) -> None:
    acl = service(tmp_path)
    acl.load()
    extra = tmp_path / "conf" / "acl" / "extra.yaml"
    extra.parent.mkdir(parents=True)
    extra.write_text("accounts:\n- accessKey: extraUser\n  secretKey: '12345678'\n")
    assert await acl.poll() and "extraUser" in acl.rules.accounts
    extra.unlink()
    assert await acl.poll() and "extraUser" not in acl.rules.accounts


async def test_the_watch_task_picks_changes_up_by_itself(tmp_path: Path) -> None:
    acl = service(tmp_path)
    acl.poll_interval_s = 0.01
    acl.load()
    async with trio.open_nursery() as nursery:
        await nursery.start(acl.run)
        acl.default_file.write_text(TWO)
        with trio.fail_after(10):
            while "rocketmq2" not in acl.rules.accounts:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


async def test_edits_are_written_and_in_force_at_once(tmp_path: Path) -> None:
    acl = service(tmp_path, TWO)
    acl.load()
    await acl.update_account(AccountUpdate(access_key="newUser1", secret_key="abcdefgh"))
    assert "newUser1" in acl.rules.accounts and "newUser1" in acl.default_file.read_text()
    assert acl.version_of(acl.default_file).counter == 1
    assert not await acl.poll()  # our own write is not a change to reload
    assert await acl.delete_account("newUser1") and "newUser1" not in acl.rules.accounts
    assert not await acl.delete_account("newUser1")
    await acl.update_global_white(["192.168.0.*"], None)
    assert len(acl.rules.global_white) == 1
    spelled = tmp_path / "conf" / ".." / "conf" / "plain_acl.yml"
    await acl.update_global_white(["192.168.1.*", "10.0.0.1"], str(spelled))
    assert len(acl.rules.global_white) == 2
    with pytest.raises(AclEditError, match="not one of"):
        await acl.update_global_white(["192.168.0.*"], "/etc/passwd")
    assert oct(acl.default_file.stat().st_mode & 0o777) == oct(0o644 & ~_umask())


async def test_a_failed_write_leaves_file_and_rules_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    acl = service(tmp_path, TWO)
    acl.load()

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError):
        await acl.update_account(AccountUpdate(access_key="newUser1", secret_key="abcdefgh"))
    assert "newUser1" not in acl.rules.accounts
    assert acl.default_file.read_text() == TWO
    assert list(acl.default_file.parent.iterdir()) == [acl.default_file]  # no temp file left


async def test_an_edit_refuses_a_file_that_is_bad_on_disk(tmp_path: Path) -> None:
    acl = service(tmp_path, TWO)
    acl.load()
    acl.default_file.write_text("accounts: [\n")
    with pytest.raises(AclEditError, match="fix the file first"):
        await acl.update_account(AccountUpdate(access_key="newUser1", secret_key="abcdefgh"))
    assert acl.default_file.read_text() == "accounts: [\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
