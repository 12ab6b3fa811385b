"""Message and SendResult: what applications build and get back."""

from __future__ import annotations

import enum

import attrs

from remoting import constants as K
from remoting.body import MessageQueue
from remoting.message import MessageConst, MessageExt


@attrs.define
class Message:
    topic: str
    body: bytes
    tags: str | None = None
    keys: str | list[str] | None = None
    properties: dict[str, str] = attrs.Factory(dict)
    flag: int = 0
    delay_level: int = 0
    wait_store_msg_ok: bool = True

    def wire_properties(self) -> dict[str, str]:
        props = dict(self.properties)
        if self.tags:
            props[MessageConst.TAGS] = self.tags
        if self.keys:
            keys = self.keys if isinstance(self.keys, str) else " ".join(self.keys)
            props[MessageConst.KEYS] = keys
        if self.delay_level > 0:
            props[MessageConst.DELAY] = str(self.delay_level)
        props[MessageConst.WAIT] = "true" if self.wait_store_msg_ok else "false"
        return props


class SendStatus(enum.Enum):
    SEND_OK = 0
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12


@attrs.frozen
class SendResult:
    status: SendStatus
    msg_id: str  # UNIQ_KEY (for a batch, comma-separated)
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int


def restore_retry_topic(msg: MessageExt, group: str) -> None:
    """A re-delivered message shows its original topic, as Java's resetRetryAndNamespace."""
    original = msg.properties.get(MessageConst.RETRY_TOPIC)
    if original and msg.topic == K.retry_topic(group):
        msg.topic = original
