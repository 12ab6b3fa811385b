"""One NameServer + broker + mqproxy per module: every test sends to its own topics and
consumes with its own groups (tests/README.md, "Shared clusters")."""

from __future__ import annotations

import pytest

from tests.integration.proxy.proxykit import start_proxy
from tests.kits.brokerkit import start_cluster

MAX_BODY = 256 * 1024  # the proxy's maxMessageSize here: oversize tests stay small


@pytest.fixture(scope="module")
def proxy_cluster(module_processes, tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy-cluster")
    ns, broker = start_cluster(module_processes, root)
    proxy = start_proxy(module_processes, root, ns.addr, maxMessageSize=MAX_BODY)
    return ns, broker, proxy
