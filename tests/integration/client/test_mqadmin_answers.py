"""mqadmin answers that used to be wrong (issue 24): each runs against real processes and
checks the answer, or that the command fails with exit 1 and says why."""

from __future__ import annotations

import signal
import time

from remoting.codes import CURRENT_VERSION
from remoting.version import version_desc
from tests.integration.client.test_mqadmin import as_json, mqadmin
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv


def test_a_group_that_never_consumed_waits_since_its_oldest_message(cluster) -> None:
    ns, _ = cluster
    sent_after = time.time()
    as_json(ns, "sendMessage", "-t", "NeverRead", "-p", "waiting")  # 1 of 4 queues has it
    as_json(ns, "updateSubGroup", "-c", "TestCluster", "-g", "NeverReader")
    report = as_json(ns, "diagnoseGroup", "-g", "NeverReader", "-t", "NeverRead")
    assert report["totalLag"] == 1
    # The empty queues, where the group has no offset either, used to count from 1970.
    assert 0 <= report["delaySeconds"] <= time.time() - sent_after + 1


def test_deleting_a_topic_the_cluster_does_not_have_fails(cluster) -> None:
    ns, _ = cluster
    done = mqadmin(ns, "deleteTopic", "-t", "NoSuchTopic", "-c", "TestCluster", ok=False)
    assert done.returncode == 1
    assert "topic 'NoSuchTopic' does not exist in cluster 'TestCluster'" in done.stderr
    assert "nothing deleted" in done.stderr and done.stdout == ""


def test_progress_on_an_unknown_topic_or_of_an_idle_group_fails(cluster) -> None:
    ns, _ = cluster
    as_json(ns, "sendMessage", "-t", "Progress", "-p", "x")
    unknown = mqadmin(ns, "consumerProgress", "-g", "G", "-t", "NoSuchTopic", ok=False)
    assert "topic 'NoSuchTopic' does not exist" in unknown.stderr
    idle = mqadmin(ns, "consumerProgress", "-g", "NobodyHere", ok=False)
    assert "no consume progress for group 'NobodyHere'" in idle.stderr
    # on a topic it names, a group that never consumed is shown lagging by all there is
    rows = as_json(ns, "consumerProgress", "-g", "NobodyHere", "-t", "Progress")["rows"]
    assert sum(row[5] for row in rows) == 1


def test_cluster_list_shows_the_version_brokers_speak(cluster) -> None:
    ns, broker = cluster
    [row] = as_json(ns, "clusterList")["rows"]
    assert row[3] == broker.addr
    assert row[4] == version_desc(CURRENT_VERSION) == "V4_9_8"  # it said V4_9_4 beside 409
    assert row[10] == "ASYNC_MASTER"


def test_cluster_list_fails_when_every_broker_is_down(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    hung = start_broker(processes, broker_conf(tmp_path, "broker-h", namesrvAddr=ns.addr))
    stopped = start_broker(processes, broker_conf(tmp_path, "broker-s", namesrvAddr=ns.addr))
    assert len(as_json(ns, "clusterList")["rows"]) == 2
    stopped.terminate()  # unregisters (a killed broker's closed connection unregisters it too)
    # A hung broker (or its host gone, no FIN) keeps its connection: the NameServer lists it
    # until 120 s of silence.
    hung.send_signal(signal.SIGSTOP)
    try:
        down = mqadmin(ns, "clusterList", ok=False)
    finally:
        hung.send_signal(signal.SIGCONT)
    assert down.returncode == 1
    assert down.stderr.strip().endswith("none of the 1 broker(s) the NameServers list answers")
    [row] = [line.split() for line in down.stdout.splitlines()[1:]]
    assert row[1] == "broker-h" and row[10] == "unreachable"
    hung.terminate()
    gone = mqadmin(ns, "clusterList", ok=False)
    assert "no broker is registered with the NameServer(s)" in gone.stderr


def test_cluster_list_fails_when_no_broker_ever_registered(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    empty = mqadmin(ns, "clusterList", ok=False)
    assert f"no broker is registered with the NameServer(s) {ns.addr}" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1


def test_ha_status_explains_its_fields(cluster) -> None:
    ns, broker = cluster
    shown = mqadmin(ns, "haStatus", "-b", broker.addr).stdout
    assert shown.splitlines()[1].split()[:3] == [broker.addr, "ASYNC_MASTER", "(no"]
    assert "InSync: the slave trails by less than haSlaveFallbehindMax bytes" in shown
    assert "Lag Millis: the master had none of the bytes the slave lacks" in shown
