"""The cluster page: every broker the NameServers know (cluster, name, id, address, role,
version), what it says of itself (TPS, messages today, disk, store health) and replication
(each slave's lag on a master, the master followed on a slave), with put and get TPS over
the last hour."""

from __future__ import annotations

import json
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response

from console.app import Console, render
from console.calls import each
from console.charts import line_chart
from console.sampler import GET_TPS, PUT_TPS, now_ms


@attrs.frozen
class BrokerRow:
    cluster: str
    name: str
    broker_id: int
    addr: str
    role: str = "-"
    version: str = "-"
    put_tps: str = "-"
    put_today: str = "-"
    get_today: str = "-"
    disk_ratio: str = "-"
    writable: str = "-"
    ha: list[str] = attrs.Factory(list)
    problem: str | None = None


def ha_lines(info: dict[str, str]) -> list[str]:
    """Replication in a few words, from a broker's runtime info (ours: haSlaves on a master,
    masterAddr and haConnected on a slave)."""
    if "haSlaves" in info:
        try:
            slaves = json.loads(info["haSlaves"])
        except ValueError:
            return ["haSlaves unreadable"]
        if not isinstance(slaves, list) or not slaves:
            return ["no slave connected"]
        lines = []
        for slave in slaves:
            if not isinstance(slave, dict):
                continue
            state = "in sync" if slave.get("inSync") else "OUT OF SYNC"
            lines.append(
                f"slave {slave.get('addr', '?')}: {state}, {slave.get('lagBytes', '?')} B / "
                f"{slave.get('lagMillis', '?')} ms behind"
            )
        return lines
    if "masterAddr" in info:
        connected = info.get("haConnected", "false") == "true"
        return [
            f"follows {info.get('masterAddr') or '?'}: "
            + ("connected" if connected else "NOT CONNECTED")
            + f", last chunk {info.get('haLastChunkMillisAgo', '?')} ms ago"
        ]
    return []


def put_tps_text(runtime_put_tps: str | None, sampled: float | None) -> str:
    """A master's put TPS over the last minute: the console's latest sample of the broker's
    own BROKER_PUT_NUMS when there is one; else its runtime info's ``putTps``: three rates
    (10 s, 1 min, 10 min), a window not covered yet empty, as Java's; the 1 min one is taken,
    the 10 s one while the broker is younger than a minute."""
    if sampled is not None:
        return f"{sampled:.2f}"
    fields = (runtime_put_tps or "").split(" ")
    for field in (fields[1], fields[0]) if len(fields) == 3 else fields[:1]:
        try:
            return f"{float(field):.2f}"
        except ValueError:
            continue
    return "-"


def broker_row(
    cluster: str, name: str, broker_id: int, addr: str, info: Any, sampled_tps: float | None = None
) -> BrokerRow:
    if isinstance(info, Exception):
        return BrokerRow(cluster, name, broker_id, addr, problem=str(info))
    ratio = info.get("commitLogDiskRatio")
    writable = info.get("storeWritable", "true") == "true" and info.get("diskFull") != "true"
    return BrokerRow(
        cluster,
        name,
        broker_id,
        addr,
        role=info.get("brokerRole", "-"),
        version=info.get("brokerVersionDesc", "-"),
        put_tps=put_tps_text(info.get("putTps"), sampled_tps),
        put_today=info.get("msgPutTotalTodayNow", "-"),
        get_today=info.get("msgGetTotalTodayNow", "-"),
        disk_ratio=f"{float(ratio) * 100:.1f} %" if ratio else "-",
        writable="yes" if writable else "NO: " + (info.get("storeDiskTrouble") or "disk full"),
        ha=ha_lines(info),
    )


async def cluster_page(console: Console, request: Request) -> Response:
    info = await console.admin.cluster_info()
    brokers = [
        (cluster, name, broker_id, addr)
        for cluster, names in sorted(info.cluster_addr_table.items())
        for name in sorted(names)
        if name in info.broker_addr_table
        for broker_id, addr in sorted(info.broker_addr_table[name].broker_addrs.items())
    ]
    runtime = await each({b[3] for b in brokers}, console.admin.runtime_info)
    rows = [
        broker_row(c, n, i, a, runtime[a], console.history.latest(PUT_TPS, n) if i == 0 else None)
        for c, n, i, a in brokers
    ]
    now, window = now_ms(), console.history.window_ms
    note = f"no samples yet: the console samples every {console.sample_interval_s:g} s"
    charts = [
        line_chart(
            "Put TPS",
            console.history.series(PUT_TPS),
            now_ms=now,
            window_ms=window,
            unit="msg/s",
            empty_note=note,
        ),
        line_chart(
            "Get TPS",
            console.history.series(GET_TPS),
            now_ms=now,
            window_ms=window,
            unit="msg/s",
            empty_note=note,
        ),
    ]
    return render(
        console,
        request,
        "cluster.html",
        rows=rows,
        charts=charts,
        namesrvs=console.admin.instance.config.namesrv_addrs,
    )
