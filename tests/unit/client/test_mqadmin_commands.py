"""mqadmin's commands and flags are the ones client/mqadmin/COMMANDS.md lists, and that table
keeps Apache 4.9.8's letters and long names (pure: builds the argparse parser, starts nothing)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from client.mqadmin import parser

TABLE = Path(__file__).resolve().parents[3] / "client" / "mqadmin" / "COMMANDS.md"
COMMON = {
    "--help",
    "--namesrvAddr",
    "--json",
    "--access-key",
    "--secret-key",
    "--tls",
    "--tls-config",
}
# Apache 4.9.8's commands as MQAdminStartup registers them (deleteAccessConfig: an alias).
APACHE_COMMANDS = {
    "updateTopic", "deleteTopic", "updateSubGroup", "deleteSubGroup", "updateBrokerConfig",
    "updateTopicPerm", "topicRoute", "topicStatus", "topicClusterList", "brokerStatus",
    "queryMsgById", "queryMsgByKey", "queryMsgByUniqueKey", "queryMsgByOffset",
    "queryMsgTraceById", "printMsg", "printMsgByQueue", "sendMsgStatus", "brokerConsumeStats",
    "producerConnection", "consumerConnection", "consumerProgress", "consumerStatus",
    "cloneGroupOffset", "producer", "clusterList", "topicList", "updateKvConfig",
    "deleteKvConfig", "wipeWritePerm", "addWritePerm", "resetOffsetByTime",
    "skipAccumulatedMessage", "updateOrderConf", "cleanExpiredCQ", "deleteExpiredCommitLog",
    "cleanUnusedTopic", "startMonitoring", "statsAll", "allocateMQ", "checkMsgSendRT",
    "clusterRT", "getNamesrvConfig", "updateNamesrvConfig", "getBrokerConfig",
    "getConsumerConfig", "queryCq", "sendMessage", "consumeMessage", "exportMetadata",
    "exportConfigs", "exportMetrics", "updateAclConfig", "deleteAclConfig",
    "clusterAclConfigVersion", "updateGlobalWhiteAddr", "deleteAccessConfig",
}  # fmt: skip


@functools.cache
def table_rows() -> dict[str, tuple[list[str], list[str], str]]:
    """command -> (Apache's flags, ours, the difference text), from the markdown table."""
    rows = {}
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("command", "---"):
            continue
        name, apache, ours, difference = cells
        rows[name] = (re.findall(r"`([^`]+)`", apache), re.findall(r"`([^`]+)`", ours), difference)
    return rows


@functools.cache
def parser_flags() -> dict[str, list[str]]:
    """command -> its flags as ``-x/--long`` (or ``--long``), common ones left out."""
    sub = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    out = {}
    for name, p in sub.choices.items():
        flags = []
        for action in p._actions:
            opts = action.option_strings
            if not opts or COMMON & set(opts):
                continue
            flags.append("/".join(sorted(opts, key=lambda o: o.startswith("--"))))
        out[name] = flags
    return out


def test_the_table_lists_every_command_and_apaches_are_all_there() -> None:
    assert set(table_rows()) == set(parser_flags())
    assert set(parser_flags()) >= APACHE_COMMANDS
    ours_only = {name for name, (apache, _, _) in table_rows().items() if not apache}
    # getAclConfig is 4.9.4's (4.9.8 dropped it with the request that returned secret keys)
    assert ours_only - APACHE_COMMANDS == {
        "diagnoseGroup",
        "haStatus",
        "getAclConfig",
        "getAccessConfigSubCommand",
        # RocketMQ 5's controller-mode commands (broker/election/: the controller is etcd)
        "getSyncStateSet",
        "getBrokerEpoch",
        "electMaster",
    }


@pytest.mark.parametrize("name", sorted(parser_flags()))
def test_a_commands_flags_are_the_tables(name: str) -> None:
    _, ours, _ = table_rows()[name]
    assert sorted(parser_flags()[name]) == sorted(ours)


@pytest.mark.parametrize("name", sorted(APACHE_COMMANDS))
def test_apaches_letters_keep_their_long_names_unless_the_table_says_why(name: str) -> None:
    apache, ours, difference = table_rows()[name]
    by_letter = {f.split("/")[0]: f for f in ours if not f.startswith("--")}
    for flag in apache:
        letter = flag.split("/")[0]
        assert letter in by_letter, f"{name}: Apache's {flag} is missing"
        if by_letter[letter] != flag:
            assert f"`{letter}`" in difference, f"{name}: {flag} became {by_letter[letter]}"


def test_update_sub_group_takes_r_as_retry_max_times_and_q_as_retry_queue_nums() -> None:
    args = parser().parse_args(
        ["updateSubGroup", "-c", "C", "-g", "G", "-r", "3", "-q", "2", "-n", "127.0.0.1:9876"]
    )
    assert (args.retryMaxTimes, args.retryQueueNums) == (3, 2)
