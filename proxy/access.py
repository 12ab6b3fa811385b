"""ACL 1.0 on the gRPC port (``enableACL``), as RocketMQ 5.1's Proxy checks it with
PlainAccessValidator: each request message's resources (PlainAccessResource.parse for
``apache.rocketmq.v2`` messages), the SDK's signature (HMAC-SHA1 of its ``x-mq-date-time``
header with the account's secret key, sent hex in ``authorization``), white lists and
permissions from the same plain_acl.yml our brokers read (acl/). A refusal ends the call with
gRPC status PERMISSION_DENIED, as the Proxy's AuthenticationInterceptor does.

``enableAclRpcHookForClusterMode``: the proxy signs its own remoting requests to NameServers
and brokers with the account in ``${rocketmqHome}/conf/tools.yml`` (Java's AclUtils)."""

from __future__ import annotations

import binascii
import hmac
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from acl.address import Address, parse_host
from acl.config import parse_tools_file
from acl.credentials import SessionCredentials
from acl.errors import FRAME_NO_ACCESS_KEY, FRAME_SIGNATURE, FRAME_UNKNOWN_ACCESS_KEY, Refusal
from acl.permission import ANY, PUB, SUB
from acl.rules import AclRules, check_perm
from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from remoting import constants as K
from remoting.codes import RequestCode
from remoting.settings import ConfigError

Resources = list[tuple[str, int]]
AUTHORIZATION = "authorization"
DATE_TIME = "x-mq-date-time"
MAX_HEADER = 1024

# RequestMapping: the remoting code each RPC counts as (refusal texts name it)
CODES = {
    "QueryRouteRequest": RequestCode.GET_ROUTEINFO_BY_TOPIC,
    "HeartbeatRequest": RequestCode.HEART_BEAT,
    "SendMessageRequest": RequestCode.SEND_MESSAGE_V2,
    "QueryAssignmentRequest": RequestCode.GET_ROUTEINFO_BY_TOPIC,
    "ReceiveMessageRequest": RequestCode.POP_MESSAGE,
    "AckMessageRequest": RequestCode.ACK_MESSAGE,
    "ChangeInvisibleDurationRequest": RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
    "ForwardMessageToDeadLetterQueueRequest": RequestCode.CONSUMER_SEND_MSG_BACK,
    "EndTransactionRequest": RequestCode.END_TRANSACTION,
    "TelemetryCommand": RequestCode.HEART_BEAT,
    "NotifyClientTerminationRequest": RequestCode.UNREGISTER_CLIENT,
}


class NotAllowed(ValueError):
    """A request whose resources cannot be named (Java's AclException from parse)."""


def _group(resource: pb.Resource, perm: int) -> tuple[str, int]:
    return K.retry_topic(resource.name), perm  # addGroupResourceAndPerm


def resources(message: Any) -> Resources:
    """PlainAccessResource.parse(GeneratedMessageV3): what each request needs."""
    kind = type(message).__name__
    if isinstance(message, rpc.HeartbeatRequest):
        consumers = (pb.ClientType.PUSH_CONSUMER, pb.ClientType.SIMPLE_CONSUMER)
        if message.client_type in consumers:
            if not message.HasField("group"):
                raise NotAllowed("Consumer heartbeat doesn't have group")
            return [_group(message.group, SUB)]
        return []
    if isinstance(message, rpc.SendMessageRequest):
        if not message.messages:
            raise NotAllowed("SendMessageRequest, messageCount is zero")
        topic = message.messages[0].topic
        if any(m.topic != topic for m in message.messages):
            raise NotAllowed("SendMessageRequest, messages' topic is not consistent")
        return [(topic.name, PUB)]
    if isinstance(message, rpc.ReceiveMessageRequest):
        return [_group(message.group, SUB), (message.message_queue.topic.name, SUB)]
    if isinstance(
        message,
        (
            rpc.AckMessageRequest,
            rpc.ForwardMessageToDeadLetterQueueRequest,
            rpc.QueryAssignmentRequest,
            rpc.ChangeInvisibleDurationRequest,
        ),
    ):
        return [_group(message.group, SUB), (message.topic.name, SUB)]
    if isinstance(message, rpc.EndTransactionRequest):
        return [(message.topic.name, PUB)]
    if isinstance(message, rpc.TelemetryCommand):
        return _telemetry(message)
    if isinstance(message, rpc.NotifyClientTerminationRequest):
        return [_group(message.group, SUB)] if message.HasField("group") else []
    if isinstance(message, rpc.QueryRouteRequest):
        return [(message.topic.name, ANY)]
    raise NotAllowed(f"{kind} is not served with ACL on")


def _telemetry(command: rpc.TelemetryCommand) -> Resources:
    if command.WhichOneof("command") != "settings":
        return []
    settings = command.settings
    out: Resources = []
    if settings.HasField("publishing"):
        out += [(topic.name, PUB) for topic in settings.publishing.topics]
    if settings.HasField("subscription"):
        out.append(_group(settings.subscription.group, SUB))
        out += [(entry.topic.name, SUB) for entry in settings.subscription.subscriptions]
    if not settings.HasField("publishing") and not settings.HasField("subscription"):
        raise NotAllowed("settings command doesn't have publishing or subscription")
    return out


def _credential(authorization: str) -> tuple[str, str] | None:
    """(accessKey, hex signature) of ``MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=...,
    Signature=hex`` (AuthorizationHeader), None when it is not that."""
    _, sep, pairs = authorization.partition(" ")
    fields: dict[str, str] = {}
    for pair in pairs.split(","):
        key, eq, value = pair.strip().partition("=")
        if eq:
            fields[key] = value.strip()
    if not sep or "Credential" not in fields or "Signature" not in fields:
        return None
    return fields["Credential"].split("/")[0], fields["Signature"]


def check(rules: AclRules, metadata: Mapping[str, str], peer: str, message: Any) -> Refusal | None:
    """None when the request may go on, else why not (PlainPermissionManager.validate)."""
    code = CODES.get(type(message).__name__, 0)
    addr = _peer_address(peer)
    if any(white.matches(addr) for white in rules.global_white):
        return None
    authorization = metadata.get(AUTHORIZATION, "")[:MAX_HEADER]
    credential = _credential(authorization) if authorization else None
    if credential is None:
        return Refusal("No accessKey is configured", FRAME_NO_ACCESS_KEY)
    access_key, signature = credential
    account = rules.accounts.get(access_key)
    if account is None:
        return Refusal(f"No acl config for {access_key}", FRAME_UNKNOWN_ACCESS_KEY)
    if account.white.matches(addr):
        return None
    date_time = metadata.get(DATE_TIME, "")[:MAX_HEADER].encode("utf-8", "replace")
    try:
        given = binascii.b2a_base64(bytes.fromhex(signature), newline=False)
    except ValueError:
        given = b""
    if not hmac.compare_digest(account.signer.sign(date_time), given):
        return Refusal(f"Check signature failed for accessKey={access_key}", FRAME_SIGNATURE)
    try:
        needed = resources(message)
    except NotAllowed as exc:
        return Refusal(str(exc), FRAME_SIGNATURE)
    return check_perm(account, code, False, needed)


def _peer_address(peer: str) -> Address | None:
    """``ipv4:1.2.3.4:5`` / ``ipv6:[::1]:5`` -> the host as the ACL white lists read it."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host = rest.rsplit(":", 1)[0].strip("[]")
    return parse_host(host)


def tools_credentials(home: Path) -> SessionCredentials:
    """``${rocketmqHome}/conf/tools.yml``'s account (enableAclRpcHookForClusterMode)."""
    path = home / "conf" / "tools.yml"
    try:
        pair = parse_tools_file(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"enableAclRpcHookForClusterMode: cannot read {path}: {exc}") from None
    if pair is None:
        raise ConfigError(f"enableAclRpcHookForClusterMode: {path} names no accessKey/secretKey")
    return SessionCredentials(*pair)


def admission(service: Any) -> Callable[[Any, Any], str | None]:
    """The gRPC boundary's check (proxy/malformed.py) over the rules ``service`` keeps current
    (a reload swaps its ``rules`` whole, so reading them from the gRPC thread is safe)."""

    def admit(message: Any, context: Any) -> str | None:
        metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        refusal = check(service.rules, metadata, context.peer() or "", message)
        return refusal.message if refusal is not None else None

    return admit
