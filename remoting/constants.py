"""Names and numbers every RocketMQ process agrees on: permissions, system topics. (The rules
a topic or group name follows are in remoting.names.)

Sources: docs/spec/remoting.md §9.2, §10; docs/spec/namesrv.md §6; docs/spec/store-format.md §9-§11.
"""

from __future__ import annotations

# PermName bits
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

# TopicSysFlag bits
TOPIC_SYS_FLAG_UNIT = 1
TOPIC_SYS_FLAG_UNIT_SUB = 2

DEFAULT_TOPIC = "TBW102"  # AUTO_CREATE_TOPIC_KEY_TOPIC
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
BENCHMARK_TOPIC = "BenchmarkTest"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"


def reply_topic(cluster_name: str) -> str:
    """Where a cluster's request-reply answers go (MixAll.REPLY_TOPIC_POSTFIX)."""
    return f"{cluster_name}_{REPLY_TOPIC_POSTFIX}"


TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
TRANS_CHECK_GROUP = "CID_RMQ_SYS_TRANS"

ORDER_TOPIC_CONFIG_NAMESPACE = "ORDER_TOPIC_CONFIG"
# Ours: brokerName -> the address of its promoted master. A NameServer refuses any other
# brokerId-0 registration for that name, so an old master cannot return as a second master.
FENCE_NAMESPACE = "ROCKETMQ_TRIO_FENCE"
FENCED_REMARK = "FENCED"
MASTER_ID = 0

SYSTEM_TOPICS = frozenset(
    {
        DEFAULT_TOPIC,
        SCHEDULE_TOPIC,
        BENCHMARK_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        TRACE_TOPIC,
    }
)
# Producers may never send to these (SEND answers NO_PERMISSION).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)


def is_system_topic(topic: str) -> bool:
    """TopicValidator.isSystemTopic: the prefix is case-sensitive (RMQ_SYS_X is a user topic)."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_inherited(perm: int) -> bool:
    return bool(perm & PERM_INHERIT)


def perm_to_string(perm: int) -> str:
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )
