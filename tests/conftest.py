"""Shared test fixtures. Paths to the shared interop captures live here."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Frames the official C++ client (rocketmq==0.4.4) really sent, captured once and kept here so a
# fresh clone tests the codec against them without anything outside the repository.
INTEROP_FRAMES = REPO_ROOT / "tests" / "data" / "interop-frames"

pytest_plugins = ["tests.harness", "tests.tlskit"]
