"""Brokers and NameServers with ACL on, the accounts the ACL tests use, and telling an ACL
refusal (NO_PERMISSION with Java's AclException remark) from any other answer."""

from __future__ import annotations

from pathlib import Path

from acl.credentials import SessionCredentials
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import TIMEOUT_S

ADMIN = SessionCredentials("aclAdmin1", "adminSecret1")
USER = SessionCredentials("aclUser01", "userSecret1")
WRONG_SECRET = SessionCredentials("aclUser01", "userSecret2")
STRANGER = SessionCredentials("stranger1", "userSecret1")

# USER may publish and consume "Allowed" in group "allowedGroup", consume "ReadOnly", and
# nothing else (both defaults DENY); "deniedGroup" is named explicitly.
PLAIN_ACL = f"""\
accounts:
  - accessKey: {ADMIN.access_key}
    secretKey: {ADMIN.secret_key}
    admin: true
  - accessKey: {USER.access_key}
    secretKey: {USER.secret_key}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - Allowed=PUB|SUB
      - ReadOnly=SUB
    groupPerms:
      - allowedGroup=SUB
      - deniedGroup=DENY
"""

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException: "


def acl_home(tmp_path: Path, text: str = PLAIN_ACL) -> Path:
    """A ROCKETMQ_HOME whose conf/plain_acl.yml holds ``text``."""
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "conf" / "plain_acl.yml").write_text(text)
    return home


def acl_file(home: Path) -> Path:
    return home / "conf" / "plain_acl.yml"


def refused_by_acl(response: RemotingCommand) -> bool:
    return response.code == ResponseCode.NO_PERMISSION and (response.remark or "").startswith(
        ACL_EXCEPTION
    )


async def signed_call(
    client: RemotingClient,
    addr: str,
    request: RemotingCommand,
    who: SessionCredentials | None,
    timeout_s: float = TIMEOUT_S,
) -> RemotingCommand:
    if who is not None:
        who.sign(request)
    return await client.invoke(addr, request, timeout_s)
