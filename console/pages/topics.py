"""The topic pages: every topic with its kind, brokers, queues and permission (one request to
the NameServers and one per master, whatever the number of topics), one topic's route,
queue offsets, TPS and consumer groups, and the forms that create, update and delete a topic
(a delete needs the topic's name typed again)."""

from __future__ import annotations

from urllib.parse import quote

import attrs
import trio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from client.mqadmin import args as A
from console.app import CLUSTER_ERRORS, Console, form_values, render
from console.calls import each
from console.forms import TOPIC_KINDS, TopicChange, TopicDelete, Values
from remoting import constants as K
from remoting.body import BrokerStatsData, ClusterInfo, TopicConfig, TopicRouteData

MAX_LISTED = 5000  # rows on one page; the filter finds the rest
# Brokers register a changed topic with the NameServers just after answering: the page the
# form leads to waits this long for the route to say so (else it would show the old one).
ROUTE_WAIT_S = 10.0


def topic_kind(topic: str, info: ClusterInfo) -> str:
    if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(K.DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    if K.is_system_topic(topic) or topic in info.cluster_addr_table:
        return "system"
    return "system" if topic in info.broker_addr_table else "user"


@attrs.frozen
class TopicRow:
    topic: str
    kind: str
    brokers: list[str]
    read_queue_nums: int
    write_queue_nums: int
    perm: str
    order: bool


def topic_rows(
    topics: list[str], info: ClusterInfo, configs: dict[str, dict[str, TopicConfig]]
) -> list[TopicRow]:
    """One row per topic, its queues summed over the masters (broker name -> their table)."""
    rows = []
    for topic in topics:
        held = {name: table[topic] for name, table in configs.items() if topic in table}
        perms = {c.perm for c in held.values()}
        rows.append(
            TopicRow(
                topic=topic,
                kind=topic_kind(topic, info),
                brokers=sorted(held),
                read_queue_nums=sum(c.read_queue_nums for c in held.values()),
                write_queue_nums=sum(c.write_queue_nums for c in held.values()),
                perm="/".join(K.perm_to_string(p) for p in sorted(perms)) or "-",
                order=any(c.order for c in held.values()),
            )
        )
    return rows


async def topics_page(console: Console, request: Request) -> Response:
    values = Values(request.query_params)
    kind = values.choice("kind", TOPIC_KINDS)
    needle = request.query_params.get("q", "").strip()[:200]
    admin = console.admin
    info = await admin.cluster_info()
    masters = await admin.masters()
    topics = await admin.topic_list()
    answers = await each(masters, lambda name: admin.all_topic_config(masters[name]))
    configs = {name: a for name, a in answers.items() if not isinstance(a, Exception)}
    problems = [f"{name}: {a}" for name, a in sorted(answers.items()) if isinstance(a, Exception)]
    rows = [
        row
        for row in topic_rows(topics, info, configs)
        if (kind == "all" or row.kind == kind) and needle.lower() in row.topic.lower()
    ]
    return render(
        console,
        request,
        "topics.html",
        rows=rows[:MAX_LISTED],
        total=len(rows),
        kind=kind,
        kinds=TOPIC_KINDS,
        needle=needle,
        clusters=sorted(info.cluster_addr_table),
        problems=problems,
    )


async def topic_page(console: Console, request: Request) -> Response:
    topic = Values(request.query_params).get("topic", A.topic)
    admin = console.admin
    route = await admin.topic_route(topic)
    stats = await admin.topic_stats(topic)
    masters = await admin.topic_masters(topic)
    configs = await each(masters, admin.all_topic_config)
    config = next(
        (c[topic] for c in configs.values() if not isinstance(c, Exception) and topic in c), None
    )
    tps = await each(masters, lambda addr: admin.view_broker_stats(addr, "TOPIC_PUT_NUMS", topic))
    groups = await admin.topic_consumer_groups(topic)
    return render(
        console,
        request,
        "topic.html",
        topic=topic,
        route=route,
        clusters=sorted({d.cluster for d in route.broker_datas}),
        queues=sorted(stats.offset_table.items()),
        config=config,
        tps={addr: t for addr, t in tps.items() if isinstance(t, BrokerStatsData)},
        groups=groups,
        perm_string=K.perm_to_string,
    )


def route_shows(route: TopicRouteData, addrs: list[str], config: TopicConfig) -> bool:
    """Whether ``route`` has ``config``'s queue numbers on every broker of ``addrs`` (not its
    perm: a broker registers its topics with its own brokerPermission applied)."""
    names = {b.broker_name for b in route.broker_datas if set(b.broker_addrs.values()) & set(addrs)}
    queues = {q.broker_name: q for q in route.queue_datas}
    return len(names) == len(addrs) and all(
        n in queues
        and (queues[n].read_queue_nums, queues[n].write_queue_nums)
        == (config.read_queue_nums, config.write_queue_nums)
        for n in names
    )


async def _await_route(console: Console, addrs: list[str], config: TopicConfig) -> None:
    with trio.move_on_after(ROUTE_WAIT_S):
        while True:
            try:
                if route_shows(await console.admin.topic_route(config.topic_name), addrs, config):
                    return
            except CLUSTER_ERRORS:  # no route yet
                pass
            await trio.sleep(0.1)


async def change_topic(console: Console, request: Request) -> Response:
    form = TopicChange.read(await form_values(console, request))
    config = TopicConfig(
        topic_name=form.topic,
        read_queue_nums=form.read_queue_nums,
        write_queue_nums=form.write_queue_nums,
        perm=form.perm,
        order=form.order,
    )
    brokers = await console.admin.create_topic_in_cluster(form.cluster, config)
    await _await_route(console, brokers, config)
    done = quote(f"{form.topic} saved on {', '.join(brokers)}")
    return RedirectResponse(f"/topic?topic={quote(form.topic)}&done={done}", status_code=303)


async def delete_topic(console: Console, request: Request) -> Response:
    form = TopicDelete.read(await form_values(console, request))
    brokers = await console.admin.delete_topic(form.topic, form.cluster)
    done = quote(f"{form.topic} deleted from {', '.join(brokers)}")
    return RedirectResponse(f"/topics?done={done}", status_code=303)
