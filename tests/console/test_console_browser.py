"""mqconsole in a real browser (headless Chromium) against a live NameServer and broker: each
page opens and shows the cluster's state, a topic created through the page is listed (and
deleted only once its name is typed), a group's lag per queue is what ``mqadmin
consumerProgress`` says, a dead letter resent from its page is consumed again, and a
read-only console offers no change. Each test saves its screenshots under its tmp dir."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from client.consumer import ConsumeStatus
from client.message import Message
from client.sync import SyncProducer, SyncPushConsumer
from remoting.body import ConsumeFromWhere
from tests.console.browserkit import browser_page, chromium_or_skip, screenshot
from tests.console.consolekit import Cluster, fetch, start_cluster, start_console
from tests.harness import ProcessPool, ServerProcess


@attrs.frozen
class Live:
    cluster: Cluster
    console: ServerProcess
    read_only: ServerProcess

    @property
    def ns(self) -> str:
        return self.cluster.namesrv.addr

    def url(self, path: str, console: ServerProcess | None = None) -> str:
        return f"http://127.0.0.1:{(console or self.console).port}{path}"


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Iterator[Live]:
    chromium_or_skip()  # before starting servers nobody would look at
    tmp = tmp_path_factory.mktemp("console-live")
    pool = ProcessPool(tmp / "logs")
    try:
        cluster = start_cluster(pool, tmp)
        console = start_console(pool, cluster.namesrv.addr, "--sample-interval", "1")
        read_only = start_console(pool, cluster.namesrv.addr, "--read-only", name="read-only")
        yield Live(cluster, console, read_only)
    finally:
        pool.stop_all()


def mqadmin(ns: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "client.mqadmin", *args, "-n", ns],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(check, what: str, timeout_s: float = 60.0):
    """Poll another process's state until ``check()`` is truthy (bounded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:g} s: {what}")
        time.sleep(0.2)


def test_pages_open_and_a_topic_created_in_the_page_is_listed(live: Live, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(live.url("/cluster"))
        brokers = page.locator("#brokers tbody").inner_text()
        assert "broker-a" in brokers and "ASYNC_MASTER" in brokers and "TestCluster" in brokers
        assert page.locator("svg.chart").count() == 2
        screenshot(page, tmp_path / "cluster.png")

        page.goto(live.url("/topics"))
        form = page.locator("#create-topic")
        form.locator("input[name=topic]").fill("BrowserMade")
        form.locator("input[name=readQueueNums]").fill("4")
        form.locator("input[name=writeQueueNums]").fill("4")
        form.locator("button").click()
        page.wait_for_url("**/topic?topic=BrowserMade**")
        assert "BrowserMade saved on" in page.locator(".done").inner_text()
        assert page.locator("#queues tbody tr").count() == 4
        screenshot(page, tmp_path / "topic.png")

        page.goto(live.url("/topics?q=BrowserMade"))
        assert page.locator("#topics tbody tr").all_inner_texts()[0].startswith("BrowserMade")
        screenshot(page, tmp_path / "topics.png")
        assert "BrowserMade" in mqadmin(live.ns, "topicList").split()

        page.goto(live.url("/topic?topic=BrowserMade"))
        delete = page.locator("#delete-topic")
        delete.locator("input[name=confirm]").fill("browsermade")  # not its name
        delete.locator("button").click()
        assert page.locator("#error").inner_text().startswith("confirm: type the topic's name")
        assert "BrowserMade" in mqadmin(live.ns, "topicList").split()
        page.goto(live.url("/topic?topic=BrowserMade"))
        delete = page.locator("#delete-topic")
        delete.locator("input[name=confirm]").fill("BrowserMade")
        delete.locator("button").click()
        page.wait_for_url("**/topics?done=**")
        assert "BrowserMade deleted from" in page.locator(".done").inner_text()
        assert "BrowserMade" not in mqadmin(live.ns, "topicList").split()


def test_a_groups_lag_per_queue_matches_consumer_progress(live: Live, tmp_path: Path) -> None:
    mqadmin(live.ns, "updateTopic", "-c", "TestCluster", "-t", "Lagging", "-r", "4", "-w", "4")
    seen: set[str] = set()
    all_seen = threading.Event()

    def listener(msgs) -> ConsumeStatus:
        seen.update(m.keys for m in msgs)
        if len(seen) == 20:
            all_seen.set()
        return ConsumeStatus.CONSUME_SUCCESS

    with SyncProducer(live.ns, "PG-lag") as producer:
        for i in range(20):
            producer.send(Message("Lagging", b"early", keys=f"e{i}"))
        with SyncPushConsumer(
            live.ns,
            "CG-lag",
            listener,
            {"Lagging": "*"},
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        ):
            assert all_seen.wait(60)
        before_late_ms = time.time() * 1000
        for i in range(7):
            producer.send(Message("Lagging", b"late", keys=f"l{i}"))

    progress = json.loads(mqadmin(live.ns, "consumerProgress", "-g", "CG-lag", "--json"))
    expected = {(r[0], r[1], str(r[2])): r[5] for r in progress["rows"]}
    assert sum(expected.values()) >= 7
    with browser_page(tmp_path / "profile") as page:
        page.goto(live.url("/group?group=CG-lag"))
        rows = page.locator("#lag tbody tr")
        shown = {}
        for i in range(rows.count()):
            row = rows.nth(i)
            key = tuple(row.get_attribute(a) for a in ("data-topic", "data-broker", "data-queue"))
            shown[key] = int(row.get_attribute("data-lag"))
            if shown[key]:  # the oldest waiting message was stored after before_late_ms
                waited = row.locator("td").nth(6).inner_text()
                assert waited.endswith(" s") and waited != "?", waited
                assert float(waited[:-2]) <= (time.time() * 1000 - before_late_ms) / 1000 + 1
        assert shown == expected
        assert page.locator("#total-lag").inner_text() == str(sum(expected.values()))
        assert "No member of CG-lag is online" in page.locator("#members").inner_text()
        screenshot(page, tmp_path / "group.png")

        page.goto(live.url("/groups"))
        row = page.locator("#groups tbody tr", has_text="CG-lag")
        assert row.locator("td").nth(4).inner_text() == str(sum(expected.values()))
        screenshot(page, tmp_path / "groups.png")

        page.goto(live.url("/diagnose?group=CG-lag&topic=Lagging"))
        problems = page.locator("#problems").inner_text()
        assert "no consumer of CG-lag is online" in problems
        screenshot(page, tmp_path / "diagnose.png")


def test_a_dead_letter_resent_from_its_page_is_consumed_again(live: Live, tmp_path: Path) -> None:
    mqadmin(live.ns, "updateTopic", "-c", "TestCluster", "-t", "Poison", "-r", "2", "-w", "2")
    failing = threading.Event()
    failing.set()
    delivered: list = []
    redelivered = threading.Event()

    def listener(msgs) -> ConsumeStatus:
        if failing.is_set():
            return ConsumeStatus.RECONSUME_LATER
        delivered.extend(msgs)
        redelivered.set()
        return ConsumeStatus.CONSUME_SUCCESS

    with SyncProducer(live.ns, "PG-poison") as producer:
        producer.send(Message("Poison", b'{"order": 42}', keys="doomed"))
    with (
        SyncPushConsumer(
            live.ns,
            "CG-poison",
            listener,
            {"Poison": "*"},
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            max_reconsume_times=1,
        ),
        browser_page(tmp_path / "profile") as page,
    ):

        def dead_letter_listed() -> bool:
            page.goto(live.url("/messages?topic=%25DLQ%25CG-poison"))
            return page.locator("#found tbody a").count() > 0

        wait_for(dead_letter_listed, "the message in %DLQ%CG-poison")
        page.locator("#found tbody a").first.click()
        page.wait_for_url("**/message?**")
        assert page.locator("#body").inner_text() == '{"order": 42}'
        page.locator(".tabs a", has_text="json").click()
        assert '"order": 42' in page.locator("#body").inner_text()
        page.locator(".tabs a", has_text="hex").click()
        assert page.locator("#body").inner_text().startswith("00000000  7b 22 6f 72")
        screenshot(page, tmp_path / "dead-letter.png")

        failing.clear()
        page.locator("#resend button").click()
        page.wait_for_url("**/message?topic=%25RETRY%25CG-poison**")
        assert "resent to %RETRY%CG-poison" in page.locator(".done").inner_text()
        assert redelivered.wait(60)
    [again] = delivered
    assert (again.topic, again.keys, again.body) == ("Poison", "doomed", b'{"order": 42}')

    def depths() -> tuple[str, str] | None:
        # the group has consumed its retry topic (two messages went through it: the first
        # send-back and the resend); the dead letter stays held in %DLQ%CG-poison
        text = fetch(live.console.port, "/group?group=CG-poison").text
        shown = tuple(
            re.search(rf'id="{n}-depth"[^>]*>(\d+)<', text).group(1) for n in ("retry", "dlq")
        )
        return shown if shown == ("0", "1") else None

    wait_for(depths, "retry depth 0 and one dead letter on CG-poison's page")


def test_a_read_only_console_offers_no_change(live: Live, tmp_path: Path) -> None:
    mqadmin(live.ns, "updateTopic", "-c", "TestCluster", "-t", "Guarded")
    with browser_page(tmp_path / "profile") as page:
        page.goto(live.url("/topic?topic=Guarded", live.read_only))
        assert page.locator("header .badge").inner_text() == "read-only"
        assert page.locator("form[method=post]").count() == 0
        answer = page.request.post(
            live.url("/topic/delete", live.read_only),
            form={"cluster": "TestCluster", "topic": "Guarded", "confirm": "Guarded"},
        )
        assert answer.status == 403 and "read-only" in answer.text()
        screenshot(page, tmp_path / "read-only.png")
    assert "Guarded" in mqadmin(live.ns, "topicList").split()
