"""One NameServer + broker per module: every test here sends to its own topics and consumes
with its own groups, so they share it (tests/README.md, "Shared clusters")."""

from __future__ import annotations

import pytest

from tests.kits.brokerkit import start_cluster

# Every delay level 1 s: retries and delayed messages come back within a test's patience.
FAST_LEVELS = " ".join(["1s"] * 18)


@pytest.fixture(scope="module")
def cluster(module_processes, tmp_path_factory):
    return start_cluster(
        module_processes, tmp_path_factory.mktemp("cluster"), messageDelayLevel=FAST_LEVELS
    )
