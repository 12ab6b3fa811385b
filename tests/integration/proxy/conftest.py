"""One NameServer + broker + mqproxy for the whole package: every test sends to its own topics
and consumes with its own groups (tests/README.md, "Shared clusters"), so the modules share
one cluster rather than start one each (3 s of start-up apiece). A test that needs other
broker settings starts its own (test_sdk_transaction_check.py)."""

from __future__ import annotations

import pytest

from tests.harness import ProcessPool
from tests.integration.proxy.proxykit import start_proxy
from tests.kits.brokerkit import start_cluster

MAX_BODY = 256 * 1024  # the proxy's maxMessageSize here: oversize tests stay small


@pytest.fixture(scope="package")
def proxy_cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy-cluster")
    pool = ProcessPool(root / "logs")
    try:
        ns, broker = start_cluster(pool, root)
        proxy = start_proxy(pool, root, ns.addr, maxMessageSize=MAX_BODY)
        yield ns, broker, proxy
    finally:
        pool.stop_all()
