"""Headless Chromium for the console's tests: Debian's ``chromium`` (the Makefile installs it
as root) driven through Playwright's Python API, which launches that binary and downloads no
browser of its own. Tests skip, saying why, when either is missing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
# What Chromium needs on a headless machine without a user session (no sandbox: the tests
# run as root; nothing reaches out to Google's services).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 900}


def chromium_or_skip() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the Python package playwright is not installed (make install brings it)")
    found = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not found:
        pytest.skip("no chromium: apt-get install chromium (make install does it as root)")
    return found


@contextmanager
def browser_page(profile_dir: Path) -> Iterator[object]:
    """A page of a fresh Chromium profile in ``profile_dir``."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile_dir),
            executable_path=executable,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport=VIEWPORT,
        )
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            yield page
        finally:
            context.close()


def screenshot(page, path: Path) -> Path:
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path
