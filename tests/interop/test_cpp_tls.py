"""The official C++ client (rocketmq==0.4.4) and TLS: it has none. Its librocketmq.so links no
TLS library (no OpenSSL symbols, no libssl) and its API has no TLS setting, so it cannot reach
a server in enforcing mode. A server in permissive mode serves it in plain beside TLS clients;
that is what this checks: it produces and consumes exactly once on such a broker."""

from __future__ import annotations

import pytest

from tests.integration.brokerkit import broker_conf, start_broker, start_namesrv
from tests.interop.cppkit import acked_keys, received, run_driver
from tests.tlskit import server_keys

pytestmark = pytest.mark.interop


def test_the_cpp_client_is_served_plain_by_permissive_servers(processes, tmp_path, certs) -> None:
    ns = start_namesrv(processes, tmp_path, **server_keys(certs, "permissive"))
    conf = broker_conf(
        tmp_path, namesrvAddr=ns.addr, useTLS="true", **server_keys(certs, "permissive")
    )
    start_broker(processes, conf)
    events = run_driver("produce", "--ns", ns.addr, "--topic", "CppPermissive", "--count", "50")
    assert events[-1] == {"done": True, "failures": 0}
    keys = acked_keys(events)
    consumed = run_driver(
        "consume", "--ns", ns.addr, "--topic", "CppPermissive", "--group", "cppTlsGroup",
        "--expect", "50", "--linger", "2",
    )  # fmt: skip
    counts = received(consumed)
    assert set(counts) == set(keys) and max(counts.values()) == 1
