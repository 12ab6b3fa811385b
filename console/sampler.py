"""Sampler: every ``interval_s`` the console asks each master for its own figures and keeps
the last hour of them in a History, which the charts draw (rocketmq-dashboard collects the
same way). Per broker, two VIEW_BROKER_STATS_DATA reads (BROKER_PUT_NUMS and BROKER_GET_NUMS
of its cluster: the broker's one-minute TPS) and one GET_BROKER_CONSUME_STATS (every group's
lag there): three requests per broker per round, whatever the number of topics.

A broker that does not answer leaves a gap in its lines; the round goes on with the others.
"""

from __future__ import annotations

import logging
import time

import trio

from client.admin import AdminClient
from client.errors import MQClientError
from console.history import History
from console.lag import lag_by_group
from remoting.errors import RemotingError

log = logging.getLogger(__name__)

PUT_TPS, GET_TPS, GROUP_LAG = "put", "get", "lag"
ROUND_TIMEOUT_S = 30.0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def sample_once(admin: AdminClient, history: History, at_ms: int) -> None:
    info = await admin.cluster_info()
    cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}
    answers = []
    for name, addr in sorted((await admin.masters()).items()):
        cluster = cluster_of.get(name, "")
        try:
            put = await admin.view_broker_stats(addr, "BROKER_PUT_NUMS", cluster)
            get = await admin.view_broker_stats(addr, "BROKER_GET_NUMS", cluster)
            stats = await admin.broker_consume_stats(addr, timeout_s=10)
        except (MQClientError, RemotingError, OSError) as exc:
            log.info("sample of %s (%s) failed: %s", name, addr, exc)
            continue
        history.add(PUT_TPS, name, at_ms, put.stats_minute.tps if put else 0.0)
        history.add(GET_TPS, name, at_ms, get.stats_minute.tps if get else 0.0)
        answers.append(stats)
    for group, total in lag_by_group(answers).items():
        history.add(GROUP_LAG, group, at_ms, float(total))
    history.forget_older_than(at_ms)


async def run_sampler(admin: AdminClient, history: History, interval_s: float) -> None:
    while True:
        with trio.move_on_after(ROUND_TIMEOUT_S) as scope:
            try:
                await sample_once(admin, history, now_ms())
            except (MQClientError, RemotingError, OSError) as exc:
                log.info("sample round failed: %s", exc)
        if scope.cancelled_caught:
            log.info("sample round took more than %.0f s: cut short", ROUND_TIMEOUT_S)
        await trio.sleep(interval_s)
