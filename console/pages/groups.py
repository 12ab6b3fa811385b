"""The consumer group pages: every group with its members and lag, one group's members,
subscriptions (members that disagree are flagged), lag per queue in messages and seconds,
retry and dead-letter depth, lag over the last hour and the offset reset form, and the
``diagnoseGroup`` report."""

from __future__ import annotations

from urllib.parse import quote

import attrs
import trio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from client.admin_brokers import is_system_group
from client.errors import MQClientError
from client.mqadmin import args as A
from console import lag as L
from console.app import CLUSTER_ERRORS, Console, form_values, render
from console.calls import each
from console.charts import line_chart
from console.forms import OffsetReset, Values, checkbox
from console.sampler import GROUP_LAG, now_ms
from remoting import constants as K
from remoting.body import ConsumerConnection, ConsumeStatsList, TopicStatsTable
from remoting.version import version_desc


@attrs.frozen
class GroupRow:
    group: str
    members: int | None  # None: the brokers could not say
    kind: str
    version: str
    lag: int


def group_row(group: str, lag: int, connection: object) -> GroupRow:
    if not isinstance(connection, ConsumerConnection):
        # the broker's "not online" answer is an error too: no member is the usual reason
        return GroupRow(group, 0 if isinstance(connection, MQClientError) else None, "-", "-", lag)
    members = connection.connection_set
    model = connection.message_model.value if connection.message_model else ""
    kind = (
        "PUSH"
        if connection.consume_type and connection.consume_type.name.endswith("PASSIVELY")
        else "PULL"
    )
    version = version_desc(min(c.version for c in members)) if members else "-"
    return GroupRow(group, len(members), f"{kind} {model}".strip(), version, lag)


async def groups_page(console: Console, request: Request) -> Response:
    show_system = checkbox(request.query_params.get("system", ""))
    admin = console.admin
    masters = sorted((await admin.masters()).values())
    configs = await each(masters, admin.all_sub_groups)
    stats = await each(masters, lambda addr: admin.broker_consume_stats(addr, timeout_s=20))
    names = {g for c in configs.values() if not isinstance(c, Exception) for g in c}
    lags = L.lag_by_group([s for s in stats.values() if isinstance(s, ConsumeStatsList)])
    names |= set(lags)
    if not show_system:
        names = {g for g in names if not is_system_group(g)}
    connections = await each(sorted(names), admin.consumer_connection)
    rows = [group_row(g, lags.get(g, 0), connections[g]) for g in sorted(names)]
    problems = [
        f"{addr}: {answer}"
        for table in (configs, stats)
        for addr, answer in sorted(table.items())
        if isinstance(answer, Exception)
    ]
    return render(
        console, request, "groups.html", rows=rows, show_system=show_system, problems=problems
    )


def subscription_rows(
    subscriptions: dict[str, dict[str, str]],
) -> tuple[list[tuple[str, dict[str, str], bool]], bool]:
    """Per topic: each member's expression and whether they differ (a member without the
    topic counts as different). ``subscriptions``: clientId -> topic -> expression."""
    topics = sorted({t for subs in subscriptions.values() for t in subs})
    rows = []
    for topic in topics:
        per_member = {client: subs.get(topic, "(none)") for client, subs in subscriptions.items()}
        rows.append((topic, per_member, len(set(per_member.values())) > 1))
    return rows, any(differs for _, _, differs in rows)


async def _members(console: Console, group: str) -> tuple[ConsumerConnection | None, dict]:
    """The group's connection (None offline) and each member's own running info."""
    try:
        connection = await console.admin.consumer_connection(group)
    except CLUSTER_ERRORS:
        return None, {}
    clients = sorted(c.client_id for c in connection.connection_set)
    infos = await each(clients, lambda c: console.admin.consumer_running_info(group, c))
    return connection, infos


def _subscriptions(connection: ConsumerConnection | None, infos: dict) -> dict[str, dict]:
    """clientId -> topic -> expression: from each member's running info, else (a member that
    did not answer) the broker's record of disagreement, else the group's table."""
    out: dict[str, dict[str, str]] = {}
    if connection is None:
        return out
    reported = connection.inconsistent_subscriptions or {}
    for member in connection.connection_set:
        info = infos.get(member.client_id)
        if info is not None and not isinstance(info, Exception):
            out[member.client_id] = {s.topic: s.sub_string for s in info.subscription_set}
        elif member.client_id in reported:
            out[member.client_id] = dict(reported[member.client_id])
        else:
            out[member.client_id] = {
                t: s.sub_string for t, s in connection.subscription_table.items()
            }
    return out


def depth(stats: TopicStatsTable | Exception) -> int:
    if isinstance(stats, Exception):
        return 0
    return sum(max(0, o.max_offset - o.min_offset) for o in stats.offset_table.values())


async def measured_lags(console: Console, group: str) -> tuple[list[L.QueueLag], int]:
    """Every queue's lag of ``group``, in messages and (for the most lagging queues) seconds:
    the store time of the message at the group's offset, read from its broker. Also how many
    lagging queues were left unmeasured."""
    admin = console.admin
    try:
        stats = await admin.consume_stats(group)
    except CLUSTER_ERRORS:
        return [], 0
    wanted = L.to_measure(stats.offset_table)
    offsets = dict(wanted)
    times = await each(list(offsets), lambda mq: admin.store_time_at(mq, offsets[mq]))
    known = {mq: t for mq, t in times.items() if not isinstance(t, Exception)}
    lagging = sum(1 for w in stats.offset_table.values() if w.broker_offset > w.consumer_offset)
    return L.queue_lags(stats.offset_table, known, now_ms()), lagging - len(wanted)


async def group_page(console: Console, request: Request) -> Response:
    group = Values(request.query_params).get("group", A.group)
    admin = console.admin
    connection, infos = await _members(console, group)
    subscriptions = _subscriptions(connection, infos)
    sub_rows, inconsistent = subscription_rows(subscriptions)
    queues, unmeasured = await measured_lags(console, group)
    owners = {
        mq: client
        for client, info in infos.items()
        if not isinstance(info, Exception)
        for mq in info.mq_table
    }
    retry, dlq = K.retry_topic(group), K.dlq_topic(group)
    dead = await each([dlq], admin.topic_stats)
    topics = sorted({q.mq.topic for q in queues} | {t for s in subscriptions.values() for t in s})
    chart = line_chart(
        f"Lag of {group}",
        console.history.series(GROUP_LAG, [group]),
        now_ms=now_ms(),
        window_ms=console.history.window_ms,
        unit="msg",
        empty_note=f"no samples yet: the console samples every {console.sample_interval_s:g} s",
    )
    return render(
        console,
        request,
        "group.html",
        group=group,
        connection=connection,
        infos=infos,
        sub_rows=sub_rows,
        members=sorted(subscriptions),
        inconsistent=inconsistent,
        queues=queues,
        unmeasured=unmeasured,
        total_lag=sum(q.messages for q in queues),
        oldest=L.oldest_seconds(queues),
        owners=owners,
        retry_topic=retry,
        dlq_topic=dlq,
        # as rocketmq-exporter's group_retrydiff and group_dlqdiff: what the group has yet
        # to consume of its retry topic, and every dead letter held (nobody consumes them)
        retry_depth=sum(q.messages for q in queues if q.mq.topic == retry),
        dlq_depth=depth(dead[dlq]),
        topics=[t for t in topics if not t.startswith(K.RETRY_GROUP_TOPIC_PREFIX)],
        chart=chart,
        version_desc=version_desc,
    )


async def reset_offset(console: Console, request: Request) -> Response:
    form = OffsetReset.read(await form_values(console, request))
    table = await console.admin.reset_offset_by_time(form.group, form.topic, form.timestamp_ms)
    done = quote(f"offsets of {form.group} on {form.topic} reset on {len(table)} queues")
    return RedirectResponse(f"/group?group={quote(form.group)}&done={done}", status_code=303)


async def diagnose_page(console: Console, request: Request) -> Response:
    values = Values(request.query_params)
    group, topic = values.get("group", A.group), values.get("topic", A.topic)
    with trio.fail_after(50):
        report = await console.admin.diagnose_group(group, topic)
    return render(console, request, "diagnose.html", report=report)
