"""The ACL admin requests (RocketMQ 4.9's AdminBrokerProcessor cases): UPDATE_AND_CREATE_ACL_CONFIG
(50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
(53) and GET_BROKER_CLUSTER_ACL_CONFIG (54, RocketMQ 4.9.4's; 4.9.8 dropped it because it
returned every secret key: ours returns the accounts without them).

Failures answer RocketMQ's codes 209/210/211 with the reason; the acl table makes every one of
these admin-only (in RocketMQ any account may create an admin account). With aclEnable=false
there are no rules to change, and the answer says so.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acl.edits import AccountUpdate, AclEditError
from acl.protocol import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    GetBrokerClusterAclConfigResponseBody,
    PlainAccessConfig,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
    split_list,
)
from acl.service import PlainAclService
from remoting.body import DataVersion
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.serde import decode_header, encode_body, encode_header_fields

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)


class AclAdminProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        for code, handler in (
            (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, self.update_account),
            (RequestCode.DELETE_ACL_CONFIG, self.delete_account),
            (RequestCode.GET_BROKER_CLUSTER_ACL_INFO, self.versions),
            (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, self.update_global_white),
            (RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, self.acl_config),
        ):
            server.register(code, handler)

    def _service(self, failure: int) -> PlainAclService:
        if self.broker.acl is None:
            raise RequestError(failure, "ACL is off on this broker (aclEnable=false)")
        return self.broker.acl

    async def update_account(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        service = self._service(failed)
        header = decode_header(CreateAccessConfigRequestHeader, request.ext_fields)
        update = AccountUpdate(
            access_key=header.access_key,
            secret_key=header.secret_key,
            white_remote_address=header.white_remote_address,
            admin=header.admin,
            default_topic_perm=header.default_topic_perm,
            default_group_perm=header.default_group_perm,
            topic_perms=split_list(header.topic_perms),
            group_perms=split_list(header.group_perms),
        )
        await _edit(service.update_account(update), failed)
        log.info("ACL account %s updated by %s", header.access_key, connection.peer)
        return request.make_response()

    async def delete_account(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        service = self._service(failed)
        header = decode_header(DeleteAccessConfigRequestHeader, request.ext_fields)
        if not await _edit(service.delete_account(header.access_key), failed):
            return request.error_response(
                failed,
                f"The accesskey[{header.access_key}] corresponding to accessConfig has been "
                "deleted failed.",
            )
        log.info("ACL account %s deleted by %s", header.access_key, connection.peer)
        return request.make_response()

    async def update_global_white(
        self, connection: Any, request: RemotingCommand
    ) -> RemotingCommand:
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        service = self._service(failed)
        header = decode_header(UpdateGlobalWhiteAddrsConfigRequestHeader, request.ext_fields)
        addresses = header.global_white_addrs.split(",")
        await _edit(service.update_global_white(addresses, header.acl_file_full_path), failed)
        log.info("ACL global white list set to %s by %s", addresses, connection.peer)
        return request.make_response()

    def versions(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        service = self._service(ResponseCode.SYSTEM_ERROR)
        config = self.broker.config

        def as_json(version: Any) -> str:
            data_version = DataVersion(counter=version.counter, timestamp=version.timestamp)
            return encode_body(data_version).decode()

        files = {path: json.loads(as_json(v)) for path, v in service.versions().items()}
        header = GetBrokerAclConfigResponseHeader(
            version=as_json(service.version_of(service.default_file)),
            all_acl_file_version=json.dumps(files, separators=(",", ":")),
            broker_name=config.broker_name,
            broker_addr=config.broker_addr,
            cluster_name=config.broker_cluster_name,
        )
        return request.make_response(ext_fields=encode_header_fields(header))

    def acl_config(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        service = self._service(ResponseCode.SYSTEM_ERROR)
        body = GetBrokerClusterAclConfigResponseBody(
            global_white_addrs=service.white_addresses(),
            plain_access_configs=[
                PlainAccessConfig(
                    access_key=v.access_key,
                    white_remote_address=v.white_remote_address,
                    admin=v.admin,
                    default_topic_perm=v.default_topic_perm,
                    default_group_perm=v.default_group_perm,
                    topic_perms=v.topic_perms,
                    group_perms=v.group_perms,
                )
                for v in service.account_views()
            ],
        )
        return request.make_response(body=encode_body(body))


async def _edit(change: Any, failed: int) -> bool:
    """Run an edit; its refusal or a failed write becomes the request's error."""
    try:
        return bool(await change)
    except AclEditError as exc:
        raise RequestError(failed, str(exc)) from None
    except OSError as exc:
        path = Path(exc.filename) if exc.filename else "the ACL file"
        raise RequestError(failed, f"cannot write {path}: {exc.strerror or exc}") from None
