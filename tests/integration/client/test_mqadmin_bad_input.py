"""mqadmin turns bad input into one line naming what is wrong, exit 1, no traceback. No server
is needed: values are checked before anything is sent, and 127.0.0.1:1 answers nobody."""

from __future__ import annotations

import os

import pytest

from tests.kits.clikit import assert_refused, run_cli

NS = ["-n", "127.0.0.1:1"]

BAD = [
    (["topicList", "-n", "127.0.0.1"], "'127.0.0.1' is not host:port"),
    (["topicList", "-n", "127.0.0.1:99999"], "port 99999 is outside 1..65535"),
    (["queryMsgById", "-i", "notahexid", *NS], "is not an offset message id"),
    (["queryMsgById", "-i", "notahexid", *NS], "queryMsgByUniqueKey"),
    (["topicList", *NS], "no NameServer answered (127.0.0.1:1)"),
    (["updateTopic", "-c", "C", "-t", "T", "-r", "lots", *NS], "-r/--readQueueNums: 'lots'"),
    (["updateTopic", "-c", "C", "-t", "T", "-w", "0", *NS], "0 is outside 1..1024"),
    (["updateTopic", "-c", "C", "-t", "T", "-p", "5", *NS], "5 is not a topic permission"),
    (["updateTopic", "-c", "C", "-t", "no spaces", *NS], "invalid topic 'no spaces'"),
    (["updateTopic", "-t", "T", *NS], "one of the arguments -b/--brokerAddr -c/--clusterName"),
    (["updateTopic", "-b", "broker-a", "-t", "T", *NS], "'broker-a' is not host:port"),
    (["updateSubGroup", "-c", "C", "-g", "G", "-s", "yes", *NS], "'yes' is not true or false"),
    (["resetOffsetByTime", "-g", "G", "-t", "T", "-s", "yesterday", *NS], "is not a time"),
    (["resetOffsetByTime", "-g", "G", "-t", "T", "-s", "2024-13-45#00:00:00:000", *NS], "time"),
    (["clusterList", "-i", "0", *NS], "0 is outside 1..86400"),
    (["queryMsgByOffset", "-t", "T", "-b", "b", "-i", "x", "-o", "0", *NS], "queue id"),
    (["printMsg", "-t", "T", "-c", "klingon", *NS], "'klingon' is not a known charset"),
    (["updateOrderConf", "-t", "T", "-m", "put", "-v", "broker-a", *NS], "brokerName:queueNums"),
    (["updateOrderConf", "-t", "T", "-m", "move", *NS], "invalid choice: 'move'"),
    (["sendMessage", "-t", "T", "-p", "x", "-i", "1", *NS], "-i (queue id) needs -b"),
    (["consumerProgress", "-g", "bad group", *NS], "invalid group 'bad group'"),
    (["nosuchCommand"], "no command 'nosuchCommand'"),
    (["help", "nosuchCommand"], "no command 'nosuchCommand'"),
    (["topicList"], "no NameServer: pass -n host:port or set NAMESRV_ADDR"),
]


@pytest.mark.parametrize(("argv", "expected"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_1(argv: list[str], expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    done = run_cli("client.mqadmin", *argv, env=env)
    line = assert_refused(done, expected)
    assert line.startswith("mqadmin")
    assert done.stdout == ""


def test_a_bad_namesrv_addr_in_the_environment_is_named() -> None:
    done = run_cli("client.mqadmin", "topicList", env={**os.environ, "NAMESRV_ADDR": "nohost"})
    assert_refused(done, "NAMESRV_ADDR: 'nohost' is not host:port")


def test_help_lists_every_command_and_shows_one() -> None:
    listing = run_cli("client.mqadmin", "help")
    assert listing.returncode == 0 and "   updateSubGroup" in listing.stdout
    assert run_cli("client.mqadmin").stdout == listing.stdout
    one = run_cli("client.mqadmin", "help", "updateSubGroup")
    assert one.returncode == 0
    assert "-r RETRYMAXTIMES, --retryMaxTimes RETRYMAXTIMES" in one.stdout
