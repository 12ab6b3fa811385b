"""mqconsole over plain HTTP against a real NameServer and broker: what it refuses (a
read-only console, a form it did not serve, bad input, a message id naming a host outside
the cluster) and that an ACL cluster works once the console has an account."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time

import pytest
import trio

from client.consumer import ConsumeStatus
from client.sync import SyncPushConsumer
from remoting.message import create_offset_msg_id
from tests.console.consolekit import fetch, start_cluster, start_console
from tests.consumekit import consume_until
from tests.integration.aclkit import ADMIN, acl_home


def mqadmin(ns: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "client.mqadmin", *args, "-n", ns],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def topics_of(ns: str, *signing: str) -> set[str]:
    done = mqadmin(ns, "topicList", *signing)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.fixture
def cluster(processes, tmp_path):
    return start_cluster(processes, tmp_path)


def test_a_read_only_console_shows_no_form_and_refuses_every_change(processes, cluster) -> None:
    ns = cluster.namesrv.addr
    assert mqadmin(ns, "updateTopic", "-c", "TestCluster", "-t", "Kept").returncode == 0
    console = start_console(processes, ns, "--read-only")
    page = fetch(console.port, "/topic?topic=Kept")
    assert page.status == 200 and "read-only" in page.text
    assert 'name="csrf"' not in page.text and "Delete the topic" not in page.text
    changes = [
        ("/topics/change", {"cluster": "TestCluster", "topic": "Made", "csrf": "x"}),
        ("/topic/delete", {"cluster": "TestCluster", "topic": "Kept", "confirm": "Kept"}),
        ("/group/reset-offset", {"group": "G", "topic": "Kept", "timestamp": "now"}),
        ("/message/resend", {"group": "G", "msgId": "7F" * 16}),
    ]
    for path, form in changes:
        refused = fetch(console.port, path, form)
        assert refused.status == 403, (path, refused.text)
        assert refused.error.startswith("this console is read-only"), refused.error
    topics = topics_of(ns)
    assert "Kept" in topics and "Made" not in topics


def test_a_form_this_console_did_not_serve_is_refused(processes, cluster) -> None:
    ns = cluster.namesrv.addr
    console = start_console(processes, ns)
    form = {"cluster": "TestCluster", "topic": "Forged"}
    for token in ({}, {"csrf": "guessed"}):
        refused = fetch(console.port, "/topics/change", {**form, **token})
        assert refused.status == 403 and "did not come from this console" in refused.error
    assert "Forged" not in topics_of(ns)
    token = fetch(console.port, "/topics").token
    made = fetch(console.port, "/topics/change", {**form, "csrf": token})
    assert made.status == 303 and made.location.startswith("/topic?topic=Forged")
    assert "Forged" in topics_of(ns)


def test_an_offset_reset_in_the_page_rewinds_the_group_once_its_name_is_typed(
    processes, cluster
) -> None:
    ns = cluster.namesrv.addr
    assert (
        mqadmin(
            ns, "updateTopic", "-c", "TestCluster", "-t", "Rewind", "-r", "1", "-w", "1"
        ).returncode
        == 0
    )
    for i in range(5):
        assert mqadmin(ns, "sendMessage", "-t", "Rewind", "-p", f"m{i}").returncode == 0
    trio.run(consume_until, ns, "Rewinder", "Rewind", lambda got: len(got) >= 5)

    def lag() -> int:
        done = mqadmin(ns, "consumerProgress", "-g", "Rewinder", "-t", "Rewind", "--json")
        assert done.returncode == 0, done.stderr
        return sum(row[5] for row in json.loads(done.stdout)["rows"])

    assert lag() == 0
    console = start_console(processes, ns)
    token = fetch(console.port, "/group?group=Rewinder").token
    form = {"group": "Rewinder", "topic": "Rewind", "timestamp": "0", "csrf": token}
    refused = fetch(console.port, "/group/reset-offset", {**form, "confirm": "rewinder"})
    assert refused.status == 400 and refused.error.startswith("confirm: type the group's name")
    assert lag() == 0
    reset = fetch(console.port, "/group/reset-offset", {**form, "confirm": "Rewinder"})
    assert reset.status == 303 and reset.location.startswith("/group?group=Rewinder&done=")
    assert lag() == 5
    page = fetch(console.port, "/group?group=Rewinder")
    assert re.search(r'id="total-lag">5<', page.text), page.text


def test_members_subscribing_differently_are_flagged_on_the_group_page(processes, cluster) -> None:
    ns = cluster.namesrv.addr
    assert mqadmin(ns, "updateTopic", "-c", "TestCluster", "-t", "Split").returncode == 0
    console = start_console(processes, ns)

    def listener(msgs) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    def member(name: str, expression: str) -> SyncPushConsumer:
        return SyncPushConsumer(
            ns, "Splitters", listener, {"Split": expression}, instance_name=name
        )

    with member("all", "*"), member("tagged", "TagA || TagB"):
        deadline = time.monotonic() + 60
        while True:  # both members' heartbeats reached the broker
            page = fetch(console.port, "/group?group=Splitters")
            if "@all<" in page.text and "@tagged<" in page.text:
                break
            assert time.monotonic() < deadline, page.error or page.text[-2000:]
            time.sleep(0.2)
    assert 'id="inconsistent"' in page.text
    row = re.search(r'<tr class="problem"><td>Split</td>(.*?)</tr>', page.text)
    assert row, page.text
    assert "<td>*</td>" in row.group(1) and "<td>TagA || TagB</td>" in row.group(1)
    assert "DIFFERS" in row.group(1)


def test_bad_input_is_one_line_naming_the_field(processes, cluster) -> None:
    console = start_console(processes, cluster.namesrv.addr)
    cases = {
        "/topic?topic=a/b": "topic: invalid topic",
        "/topic": "topic: required",
        "/group?group=" + "g" * 300: "group: invalid group",
        "/messages?topic=T&msgId=zz": "msgId: ",
        "/messages?topic=T&begin=yesterday": "begin: ",
        "/message?topic=T&id=7F&view=pdf": "view: ",
        "/topics?kind=secret": "kind: ",
    }
    for path, expected in cases.items():
        page = fetch(console.port, path)
        assert page.status == 400, (path, page.status)
        assert page.error.startswith(expected), (path, page.error)
    token = fetch(console.port, "/topics").token
    delete = {"cluster": "TestCluster", "topic": "T", "confirm": "t", "csrf": token}
    refused = fetch(console.port, "/topic/delete", delete)
    assert refused.status == 400 and refused.error.startswith("confirm: type the topic")
    missing = fetch(console.port, "/topic?topic=NoSuchTopic")
    assert missing.status == 502 and "No topic route info" in missing.error
    assert "Traceback" not in console.log_tail(400)


def test_an_offset_msg_id_naming_a_host_outside_the_cluster_is_never_contacted(
    processes, cluster
) -> None:
    """An offsetMsgId carries an address: typed into the console, it must not make the
    console connect wherever it points."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    contacted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                contacted.append(listener.accept())
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        outside = create_offset_msg_id(bytes([127, 0, 0, 1]), listener.getsockname()[1], 1234)
        console = start_console(processes, cluster.namesrv.addr)
        shown = fetch(console.port, f"/message?topic=T&id={outside}")
        assert shown.status == 502, shown.error  # not found (T has no route either)
        token = fetch(console.port, "/topics").token
        form = {"group": "G", "msgId": outside, "csrf": token}
        resend = fetch(console.port, "/message/resend", form)
        assert resend.status == 400 and "on a broker of this cluster" in resend.error
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert contacted == []


def test_an_acl_cluster_works_with_the_account_the_console_is_given(processes, tmp_path) -> None:
    cluster = start_cluster(processes, tmp_path, aclEnable="true", rocketmqHome=acl_home(tmp_path))
    ns = cluster.namesrv.addr
    unsigned = start_console(processes, ns, name="unsigned")
    token = fetch(unsigned.port, "/topics").token
    form = {"cluster": "TestCluster", "topic": "Signed", "csrf": token}
    refused = fetch(unsigned.port, "/topics/change", form)
    assert refused.status == 502 and "No accessKey is configured" in refused.error
    env = {"ROCKETMQ_ACCESS_KEY": ADMIN.access_key, "ROCKETMQ_SECRET_KEY": ADMIN.secret_key}
    signed = start_console(processes, ns, name="signed", env=env)
    assert f"signed as {ADMIN.access_key}" in fetch(signed.port, "/cluster").text
    token = fetch(signed.port, "/topics").token
    made = fetch(signed.port, "/topics/change", {**form, "csrf": token})
    assert made.status == 303, made.text
    page = fetch(signed.port, "/topic?topic=Signed")
    assert page.status == 200 and re.search(r"<td>broker-a</td>", page.text)
    assert fetch(signed.port, "/groups").status == 200
    assert ADMIN.secret_key not in page.text + signed.log_tail(400)
