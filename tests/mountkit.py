"""Small real filesystems for disk-trouble tests: a tmpfs of a few KiB (then filled), or a
read-only one. Tests run as root here; elsewhere they skip, saying why. Always unmounted."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(where: Path, *, size_kib: int = 256, read_only: bool = False) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    options = f"size={size_kib}k" + (",ro" if read_only else "")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@contextlib.contextmanager
def read_only(where: Path) -> Iterator[Path]:
    """``where`` and what it holds made read-only in place (a read-only bind mount over it), as
    /etc is to a service user: even root cannot write there."""
    steps = (
        ["mount", "--bind", str(where), str(where)],
        ["mount", "-o", "remount,bind,ro", str(where)],
    )
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                pytest.skip(f"cannot bind-mount read-only (needs root): {done.stderr.strip()}")
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(where: Path) -> None:
    """Write until the filesystem is full (ENOSPC): the file stays, the disk is full."""
    block = bytes(4096)
    with open(where / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError:
            pass


def free(where: Path) -> None:
    (where / "filler").unlink(missing_ok=True)
