"""Where the ACL files are and how they are read and written (blocking: callers run these in
a worker thread). RocketMQ 4.9 reads ``${ROCKETMQ_HOME}/conf/plain_acl.yml`` and every
``.yml``/``.yaml`` file under ``${ROCKETMQ_HOME}/conf/acl/``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import attrs

from acl.config import MAX_ACL_FILE_BYTES
from acl.errors import AclConfigError

DEFAULT_FILE = Path("conf") / "plain_acl.yml"
ACL_DIR = Path("conf") / "acl"
MAX_ACL_FILES = 256


@attrs.frozen
class FileText:
    path: Path
    text: str
    digest: bytes


def resolve_acl_file(home: Path, configured: str | None) -> Path:
    """The default file: ``configured`` (relative to home unless absolute), else Java's."""
    path = Path(configured) if configured else DEFAULT_FILE
    return path if path.is_absolute() else home / path


def list_acl_files(acl_dir: Path, default_file: Path) -> list[Path]:
    """The files to load, in Java's order (the directory's, sorted, then the default file)."""
    found: list[Path] = []
    if acl_dir.is_dir():
        for root, dirs, names in os.walk(acl_dir):
            dirs.sort()
            found.extend(Path(root) / n for n in sorted(names) if n.endswith((".yml", ".yaml")))
            if len(found) > MAX_ACL_FILES:
                raise AclConfigError(f"{acl_dir}: more than {MAX_ACL_FILES} ACL files")
    if default_file not in found:
        found.append(default_file)
    return found


def read_acl_file(path: Path) -> FileText:
    """The file's text and digest; AclConfigError when it cannot be read or is too large."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_ACL_FILE_BYTES + 1)
    except OSError as exc:
        raise AclConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_ACL_FILE_BYTES:
        raise AclConfigError(f"{path}: larger than {MAX_ACL_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AclConfigError(f"{path}: not UTF-8: {exc}") from None
    return FileText(path, text, hashlib.sha256(data).digest())


def write_acl_file(path: Path, text: str) -> bytes:
    """Replace the file atomically (a crash leaves the old or the new one); its digest.
    OSError (ENOSPC, EIO, ...) leaves the old file in place."""
    data = text.encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        mode = path.stat().st_mode & 0o777  # keep the operator's; new files hold secrets
    except FileNotFoundError:
        mode = 0o600
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return hashlib.sha256(data).digest()
