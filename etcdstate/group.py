"""A broker group's replication state as kept in etcd: the key layout and the JSON every
process that reads it shares (brokers in controller mode, mqadmin, benchmarks). Pure: the one
place a value read from etcd is checked (GroupStateError names the field).

Keys, under ``controllerEtcdPrefix``/<cluster>/<brokerName>/:
  ``group``            GroupState as JSON: the master (member id, addresses), the epoch and
                       the SyncStateSet. Every change is a transaction comparing the key's
                       mod_revision with the one read, so two writers never both win.
  ``members/<id>``     Member as JSON, bound to that broker's lease: present while it lives.

An election (GroupState.elect) follows RocketMQ 5's controller (ReplicasInfoManager.electMaster):
the epoch goes up by one and the new SyncStateSet is the new master alone until its slaves
catch up. Who may be elected is the broker's rule (broker/election/group_state.py).
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from etcdstate.epochs import EpochEntry, EpochFileError, check

MAX_MEMBERS = 64
MAX_ADDR = 300


class GroupStateError(ValueError):
    """A value in etcd that is not what a broker writes there."""


def group_key(prefix: str, cluster: str, broker_name: str) -> bytes:
    return f"{prefix}/{cluster}/{broker_name}/group".encode()


def members_prefix(prefix: str, cluster: str, broker_name: str) -> bytes:
    return f"{prefix}/{cluster}/{broker_name}/members/".encode()


def member_key(prefix: str, cluster: str, broker_name: str, broker_id: int) -> bytes:
    return members_prefix(prefix, cluster, broker_name) + str(broker_id).encode()


def _field(obj: dict[str, Any], name: str, kind: type) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise GroupStateError(f"{name} is missing or not a {kind.__name__}")
    return value


def _member_id(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise GroupStateError(f"{name}={value!r:.40} is not a member id")
    return value


def _addr(obj: dict[str, Any], name: str) -> str:
    value = _field(obj, name, str)
    if len(value) > MAX_ADDR:
        raise GroupStateError(f"{name} longer than {MAX_ADDR} characters")
    return value


def _object(data: bytes) -> dict[str, Any]:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise GroupStateError("not JSON") from None
    if not isinstance(obj, dict):
        raise GroupStateError("not a JSON object")
    return obj


@attrs.frozen
class Member:
    broker_id: int
    addr: str  # brokerIP1:listenPort
    ha_addr: str  # the HA port slaves dial when this member is master
    # The CommitLog's end as this member last reported it (a slave: what it has replicated).
    max_phys_offset: int = 0
    # The epoch whose master this member saw gone when it reported: its log can no longer
    # grow in that epoch, so the offset is final for the election that ends it (0: not so).
    final_epoch: int = 0

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "brokerId": self.broker_id,
                "addr": self.addr,
                "haAddr": self.ha_addr,
                "maxPhyOffset": self.max_phys_offset,
                "finalEpoch": self.final_epoch,
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> Member:
        obj = _object(data)
        offset = _field(obj, "maxPhyOffset", int)
        if not 0 <= offset < 2**63:
            raise GroupStateError(f"maxPhyOffset={offset} out of range")
        final = obj.get("finalEpoch", 0)
        if isinstance(final, bool) or not isinstance(final, int) or not 0 <= final < 2**31:
            raise GroupStateError(f"finalEpoch={final!r:.20} out of range")
        return cls(
            _member_id(obj.get("brokerId"), "brokerId"),
            _addr(obj, "addr"),
            _addr(obj, "haAddr"),
            offset,
            final,
        )


@attrs.frozen
class GroupState:
    epoch: int
    master: Member
    sync_state_set: frozenset[int]
    # Each term's first CommitLog byte in the master's log (the newest last); a master adds
    # its own when it starts serving (Elector.begin_term).
    epochs: tuple[EpochEntry, ...] = ()

    @property
    def term_recorded(self) -> bool:
        return bool(self.epochs) and self.epochs[-1].epoch == self.epoch

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "epoch": self.epoch,
                "masterBrokerId": self.master.broker_id,
                "masterAddr": self.master.addr,
                "masterHaAddr": self.master.ha_addr,
                "syncStateSet": sorted(self.sync_state_set),
                "epochs": [[e.epoch, e.start_offset] for e in self.epochs],
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> GroupState:
        obj = _object(data)
        epoch = _field(obj, "epoch", int)
        if not 0 < epoch < 2**31:
            raise GroupStateError(f"epoch={epoch} out of range")
        master = Member(
            _member_id(obj.get("masterBrokerId"), "masterBrokerId"),
            _addr(obj, "masterAddr"),
            _addr(obj, "masterHaAddr"),
        )  # its offset is not kept here: it changes with every send
        members = _field(obj, "syncStateSet", list)
        if len(members) > MAX_MEMBERS:
            raise GroupStateError(f"syncStateSet has over {MAX_MEMBERS} members")
        sync_state_set = frozenset(_member_id(m, "syncStateSet[]") for m in members)
        if master.broker_id not in sync_state_set:
            raise GroupStateError("the master is not in its own syncStateSet")
        return cls(epoch, master, sync_state_set, _epochs(obj.get("epochs", [])))

    @classmethod
    def first(cls, master: Member) -> GroupState:
        """A group's state when its first broker starts: that broker is master, epoch 1."""
        return cls(1, master, frozenset([master.broker_id]))

    def elect(self, winner: Member) -> GroupState:
        master = attrs.evolve(winner, max_phys_offset=0, final_epoch=0)
        return GroupState(self.epoch + 1, master, frozenset([winner.broker_id]), self.epochs)

    def with_sync_state_set(self, members: frozenset[int]) -> GroupState:
        assert self.master.broker_id in members
        return attrs.evolve(self, sync_state_set=members)


def _epochs(raw: object) -> tuple[EpochEntry, ...]:
    if not isinstance(raw, list) or len(raw) > 2 * MAX_MEMBERS:
        raise GroupStateError("epochs is not a list of at most 128 entries")
    entries = []
    for item in raw:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)
        ):
            raise GroupStateError(f"epochs[] entry {item!r:.40} is not [epoch, startOffset]")
        entries.append(EpochEntry(item[0], item[1]))
    try:
        return tuple(check(entries))
    except EpochFileError as exc:
        raise GroupStateError(f"epochs: {exc}") from None
