"""The admin client's ACL calls (RocketMQ 4.9's DefaultMQAdminExt: createAndUpdatePlainAccessConfig,
deletePlainAccessConfig, updateGlobalWhiteAddrConfig, examineBrokerClusterAclVersionInfo and
4.9.4's examineBrokerClusterAclConfig), and which brokers a cluster-wide change goes to."""

from __future__ import annotations

import datetime
import json
from typing import Any

from acl.protocol import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    GetBrokerClusterAclConfigResponseBody,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from client.admin import AdminClient
from client.errors import MQClientError
from remoting.codes import RequestCode
from remoting.serde import decode_body, decode_header, encode_header_fields


async def every_broker(admin: AdminClient, cluster: str) -> list[str]:
    """Masters and slaves of a cluster (Java's fetchMasterAndSlaveAddrByClusterName): every
    broker keeps its own ACL file."""
    info = await admin.cluster_info()
    names = info.cluster_addr_table.get(cluster)
    if not names:
        raise MQClientError(f"cluster {cluster!r} not found")
    return sorted(
        addr for name in names for addr in info.broker_addr_table[name].broker_addrs.values()
    )


async def update_account(
    admin: AdminClient, addr: str, header: CreateAccessConfigRequestHeader
) -> None:
    fields = encode_header_fields(header)
    await admin._ok(addr, admin._req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields))


async def delete_account(admin: AdminClient, addr: str, access_key: str) -> None:
    fields = encode_header_fields(DeleteAccessConfigRequestHeader(access_key))
    await admin._ok(addr, admin._req(RequestCode.DELETE_ACL_CONFIG, fields))


async def update_global_white(
    admin: AdminClient, addr: str, addresses: str, acl_file: str | None
) -> None:
    fields = encode_header_fields(UpdateGlobalWhiteAddrsConfigRequestHeader(addresses, acl_file))
    await admin._ok(addr, admin._req(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, fields))


async def acl_versions(admin: AdminClient, addr: str) -> GetBrokerAclConfigResponseHeader:
    response = await admin._ok(addr, admin._req(RequestCode.GET_BROKER_CLUSTER_ACL_INFO))
    return decode_header(GetBrokerAclConfigResponseHeader, response.ext_fields)


async def acl_config(admin: AdminClient, addr: str) -> GetBrokerClusterAclConfigResponseBody:
    response = await admin._ok(addr, admin._req(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG))
    return decode_body(GetBrokerClusterAclConfigResponseBody, response.body)


def version_rows(header: GetBrokerAclConfigResponseHeader) -> list[list[Any]]:
    """clusterAclConfigVersion's rows: one per ACL file of the broker."""
    files = json.loads(header.all_acl_file_version or "{}")
    rows = []
    for path, version in sorted(files.items()):
        when = datetime.datetime.fromtimestamp(version.get("timestamp", 0) / 1000)
        rows.append(
            [
                header.cluster_name,
                header.broker_name,
                header.broker_addr,
                path,
                version.get("counter", 0),
                when.strftime("%Y-%m-%d %H:%M:%S"),
            ]
        )
    return rows
