"""Topic and group names: RocketMQ's rules, in one place (docs/spec/remoting.md §9.2, §9.11).

A topic becomes a directory of the store (``consumequeue/<topic>/<queueId>``) and a consumer
group becomes one through its retry and dead-letter topics, so a name from the wire is used
only once it passed here: the charset ``^[%|a-zA-Z0-9_-]+$`` admits no ``/``, ``.``, NUL or
non-ASCII, and the lengths keep every name a single path component.

* Topics: TopicValidator.validateTopic (blank, charset, at most 127 characters).
* Groups: the Java client's Validators.checkGroup (blank, at most 255 characters, charset);
  RocketMQ's broker checks no group names, its clients do.
* ``%RETRY%<group>`` and ``%DLQ%<group>``, built by the broker from a group, may be longer
  than 127 (Java's broker creates them without the topic check) but never longer than 255,
  the longest file name: a group of 249 to 255 characters has no usable retry topic, on a Java
  broker either (its ConsumeQueue directory cannot be created).

Names repeat (every send names its topic), so each valid one is remembered in a bounded set
and costs one lookup afterwards.
"""

from __future__ import annotations

import re

from remoting.constants import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

TOPIC_MAX_LENGTH = 127  # TopicValidator.TOPIC_MAX_LENGTH
GROUP_MAX_LENGTH = 255  # Validators.CHARACTER_MAX_LENGTH
FILE_NAME_MAX_LENGTH = 255  # NAME_MAX: what a derived topic must fit as a directory name
CHARSET = "^[%|a-zA-Z0-9_-]+$"

_LEGAL = re.compile(r"[%|a-zA-Z0-9_-]+")
_REMEMBERED = 65_536  # distinct valid names kept per kind; past that, each is checked again
valid_topics: set[str] = set()
valid_groups: set[str] = set()


def topic_problem(topic: str) -> str | None:
    """Why ``topic`` is not a usable topic name (TopicValidator's wording), or None."""
    if topic in valid_topics:
        return None
    problem = _topic_problem(topic)
    if problem is None and len(valid_topics) < _REMEMBERED:
        valid_topics.add(topic)
    return problem


def group_problem(group: str) -> str | None:
    """Why ``group`` is not a usable group name (Validators.checkGroup's wording), or None."""
    if group in valid_groups:
        return None
    problem = _group_problem(group)
    if problem is None and len(valid_groups) < _REMEMBERED:
        valid_groups.add(group)
    return problem


def _topic_problem(topic: str) -> str | None:
    if not topic:
        return "The specified topic is blank."
    if not _LEGAL.fullmatch(topic):
        return f"The specified topic contains illegal characters, allowing only {CHARSET}"
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if topic.startswith(prefix) and len(topic) > TOPIC_MAX_LENGTH:
            if len(topic) > FILE_NAME_MAX_LENGTH:
                return (
                    f"The specified topic is longer than {FILE_NAME_MAX_LENGTH}, "
                    "the longest file name."
                )
            return _group_problem(topic[len(prefix) :])
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    return None


def _group_problem(group: str) -> str | None:
    if not group:
        return "the specified group is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}."
    if not _LEGAL.fullmatch(group):
        return f"the specified group[{group}] contains illegal characters, allowing only {CHARSET}"
    return None
