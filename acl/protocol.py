"""The headers and body of the ACL admin requests, codes 50-54 (RocketMQ 4.9's
CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
UpdateGlobalWhiteAddrsConfigRequestHeader, GetBrokerAclConfigResponseHeader and 4.9.4's
GetBrokerClusterAclConfigResponseBody). Encode and decode with remoting.serde."""

from __future__ import annotations

import attrs


@attrs.define(kw_only=True)
class CreateAccessConfigRequestHeader:
    access_key: str
    secret_key: str | None = attrs.field(default=None, repr=False)
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: str | None = None  # "topicA=DENY,topicB=SUB"
    group_perms: str | None = None


@attrs.define
class DeleteAccessConfigRequestHeader:
    access_key: str


@attrs.define
class UpdateGlobalWhiteAddrsConfigRequestHeader:
    global_white_addrs: str  # "10.10.103.*,192.168.0.*"
    # Required in 4.9.8's header, but its own mqadmin sends none without -p: optional here.
    acl_file_full_path: str | None = None


@attrs.define(kw_only=True)
class GetBrokerAclConfigResponseHeader:
    version: str  # the default file's DataVersion as JSON
    all_acl_file_version: str | None = None  # JSON {path: DataVersion}
    broker_name: str
    broker_addr: str
    cluster_name: str


@attrs.define(kw_only=True)
class PlainAccessConfig:
    access_key: str
    secret_key: str | None = None  # never filled in by our broker
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] = attrs.Factory(list)
    group_perms: list[str] = attrs.Factory(list)


@attrs.define
class GetBrokerClusterAclConfigResponseBody:
    global_white_addrs: list[str] = attrs.Factory(list)
    plain_access_configs: list[PlainAccessConfig] = attrs.Factory(list)


def split_list(text: str | None) -> list[str] | None:
    """Java's UtilAll.split(text, ","): None stays None."""
    return None if text is None else text.split(",")
