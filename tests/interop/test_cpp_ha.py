"""The official C++ client with a master/slave pair: what the master stored and replicated is
still consumable from the slave after the master dies."""

from __future__ import annotations

import pytest
import trio

from remoting.client import RemotingClient
from tests.interop.cppkit import acked_keys, received, run_driver
from tests.kits.brokerkit import start_namesrv
from tests.kits.hakit import start_pair, wait_converged, wait_topic_on_slave

pytestmark = pytest.mark.interop


# 12 s: with make test-all; reads from the slave after the master dies run by default with our
# client (tests/integration/ha).
@pytest.mark.slow
def test_consumer_reads_from_the_slave_after_the_master_is_killed(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    pair = start_pair(processes, tmp_path, ns.addr)
    acked = acked_keys(
        run_driver("produce", "--ns", ns.addr, "--topic", "Failover", "--count", "2000")
    )
    assert len(acked) == 2000

    async def replicated() -> None:
        async with RemotingClient.open() as client:
            await wait_converged(client, pair.master.addr, pair.slave.addr)
            await wait_topic_on_slave(client, pair.slave.addr, "Failover")

    trio.run(replicated)
    pair.master.kill()
    got = run_driver(
        "consume",
        "--ns",
        ns.addr,
        "--topic",
        "Failover",
        "--group",
        "FromSlave",
        "--expect",
        "2000",
        "--timeout",
        "90",
    )
    assert set(received(got)) == set(acked)
