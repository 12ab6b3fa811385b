"""What the ACL raises and how a refusal reads on the wire."""

from __future__ import annotations

import attrs

# Java answers a refusal with RemotingHelper.exceptionSimpleDesc(AclException): the exception's
# toString() and its first stack frame. Clients and operators grep for these, so the frames are
# the ones RocketMQ 4.9.8 reports for each refusal.
_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
FRAME_NO_ACCESS_KEY = f"{_MANAGER}.validate(PlainPermissionManager.java:664)"
FRAME_UNKNOWN_ACCESS_KEY = f"{_MANAGER}.validate(PlainPermissionManager.java:668)"
FRAME_SIGNATURE = f"{_MANAGER}.validate(PlainPermissionManager.java:684)"
FRAME_NEED_ADMIN = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:581)"
FRAME_DEFAULT_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:606)"
FRAME_RESOURCE_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:611)"
FRAME_PARSE = (
    "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"
)


class AclConfigError(ValueError):
    """An ACL file that cannot be used; the message names the file, the line and the reason."""


@attrs.frozen
class Refusal:
    """Why a request was refused (Java's AclException message) and where Java throws it."""

    message: str
    frame: str

    @property
    def remark(self) -> str:
        return f"{_EXCEPTION}: {self.message}, {self.frame}"
