"""Shared test fixtures. Paths to the shared interop captures live here."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The steering repo's captures of what the official C++ client really sent.
INTEROP_FRAMES = REPO_ROOT.parent / "shared" / "interop" / "frames"

pytest_plugins = ["tests.harness"]
