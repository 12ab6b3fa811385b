"""GroupStore: a broker group's state in etcd, read and changed (group.py's layout): the reads
and the compare-and-swap every writer uses, a member in controller mode or mqadmin alike."""

from __future__ import annotations

import logging

from etcdstate.etcd import EtcdClient
from etcdstate.etcd_json import Compare, EtcdError, Put
from etcdstate.group import (
    GroupState,
    GroupStateError,
    Member,
    group_key,
    member_key,
    members_prefix,
)

log = logging.getLogger(__name__)


class GroupStore:
    def __init__(self, etcd: EtcdClient, prefix: str, cluster: str, broker_name: str) -> None:
        self.etcd = etcd
        self.prefix, self.cluster, self.broker_name = prefix, cluster, broker_name
        self.group_key = group_key(prefix, cluster, broker_name)
        self.members_prefix = members_prefix(prefix, cluster, broker_name)

    def member_key(self, broker_id: int) -> bytes:
        return member_key(self.prefix, self.cluster, self.broker_name, broker_id)

    async def read(self) -> tuple[GroupState | None, int, dict[int, Member]]:
        """(the state or None, its mod_revision, the members holding a lease by id). A member
        key that does not decode is left out (logged); a state that does not is EtcdError."""
        kv = await self.etcd.get(self.group_key)
        items = await self.etcd.get_prefix(self.members_prefix)
        alive: dict[int, Member] = {}
        for item in items:
            try:
                member = Member.decode(item.value)
            except GroupStateError as exc:
                log.warning("controller: %s ignored: %s", item.key.decode(errors="replace"), exc)
                continue
            alive[member.broker_id] = member
        if kv is None:
            return None, 0, alive
        try:
            return GroupState.decode(kv.value), kv.mod_revision, alive
        except GroupStateError as exc:
            raise EtcdError(f"{self.group_key.decode()}: {exc}") from None

    async def swap(self, seen_revision: int, new: GroupState, *, fallen: int | None) -> bool:
        """Write ``new`` if the state is still the one read (and, for an election, the fallen
        master's member key is still absent: it did not come back in between)."""
        compare = [Compare.mod_revision(self.group_key, seen_revision)]
        if seen_revision == 0:
            compare = [Compare.absent(self.group_key)]
        if fallen is not None:
            compare.append(Compare.absent(self.member_key(fallen)))
        result = await self.etcd.txn(compare, [Put(self.group_key, new.encode())])
        return result.succeeded
