"""Pure: 5.x topic attributes, as UPDATE_AND_CREATE_TOPIC's ``attributes`` field changes them
(AttributeParser + AttributeUtil.alterCurrentAttributes): ``+key=value`` adds or changes,
``-key`` removes, items joined by commas. The one attribute a 5.x broker knows for topics is
``message.type`` (TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE): NORMAL, FIFO, DELAY,
TRANSACTION or MIXED; the Proxy reads it (GET_TOPIC_CONFIG) to check what is sent.
"""

from __future__ import annotations

MESSAGE_TYPE = "message.type"
MESSAGE_TYPES = frozenset({"NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"})
KNOWN = {MESSAGE_TYPE: MESSAGE_TYPES}
MAX_TEXT = 1024


class AttributeError_(ValueError):
    """A malformed or unsupported change; the message names the item."""


def alter(current: dict[str, str] | None, modification: str | None) -> dict[str, str] | None:
    """The attributes after ``modification``; None when there are none."""
    if not modification:
        return current
    if len(modification) > MAX_TEXT:
        raise AttributeError_(f"attributes longer than {MAX_TEXT} characters")
    result = dict(current or {})
    seen: set[str] = set()
    for item in modification.split(","):
        if "=" in item:
            key, _, value = item.partition("=")
            if not key.startswith("+"):
                raise AttributeError_(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = item, None
            if not key.startswith("-"):
                raise AttributeError_(f"delete attribute format is wrong: {key}")
        name = key[1:]
        if name in seen:
            raise AttributeError_(f"key duplication: {key}")
        seen.add(name)
        if name not in KNOWN:
            raise AttributeError_(f"unsupported key: {name}")
        if value is None:
            result.pop(name, None)
        elif value not in KNOWN[name]:
            raise AttributeError_(f"value is not in set: {sorted(KNOWN[name])}, {name}={value}")
        else:
            result[name] = value
    return result or None
