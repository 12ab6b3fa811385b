"""Start-up in controller mode (``enableControllerMode=true``): the role comes from etcd before
the broker is built, and a role change is a restart of the whole broker (broker/__main__.py).

A master registers as brokerId 0 (what every 4.x client and NameServer expects of a master);
a slave registers with its member id and dials the HA address etcd names, never one a
NameServer's possibly older route offers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import trio

from broker.config import BrokerConfig
from broker.controller import BrokerController
from broker.election import epoch_file, promise_file
from broker.election.elector import Elector, ElectorConfig, Role
from broker.election.truncation import TruncationReport, save_and_truncate
from broker.ha.protocol import encode_hello
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.mapped_file import StoreError
from broker.store.message_store import DefaultMessageStore
from etcdstate.epochs import EpochEntry, EpochFileError, append
from etcdstate.etcd import EtcdClient
from etcdstate.group import GroupState, Member
from remoting.runtime_config import RuntimeConfig

log = logging.getLogger(__name__)


def elector_config(config: BrokerConfig, store_config: MessageStoreConfig) -> ElectorConfig:
    member = Member(
        config.broker_id,
        config.broker_addr,
        config.ha_server_addr(store_config.ha_listen_port),
    )
    return ElectorConfig(
        prefix=config.controller_etcd_prefix,
        cluster=config.broker_cluster_name,
        broker_name=config.broker_name,
        member=member,
        lease_ttl_s=config.lease_ttl_s,
        unclean=config.enable_elect_unclean_master,
        max_gap_not_in_sync=config.ha_max_gap_not_in_sync,
    )


def role_configs(
    config: BrokerConfig, store_config: MessageStoreConfig, role: Role
) -> tuple[BrokerConfig, MessageStoreConfig]:
    if role.master:
        return attrs.evolve(config, broker_id=0), store_config
    return config, attrs.evolve(
        store_config, broker_role=BrokerRole.SLAVE, ha_master_address=role.state.master.ha_addr
    )


async def serve_elected(
    config: BrokerConfig,
    store_config: MessageStoreConfig,
    runtime: RuntimeConfig,
    serve: Callable[[BrokerController, Elector], Awaitable[None]],
) -> str | None:
    """Bootstrap the role, build the broker for it and serve; the restart reason, if any."""
    etcd = EtcdClient(config.etcd_endpoints)
    try:
        elector = Elector(etcd, elector_config(config, store_config))
        # a promise given before a restart is kept (promises.py)
        kept = promise_file.remaining_s(store_config.store_path_root_dir, config.lease_ttl_s)
        elector.ledger.until = elector.clock() + kept
        # An election ranks candidates by their logs' ends: this one's is known before the
        # role is, by a recovery of its own (the broker's store recovers again, quickly).
        end = await trio.to_thread.run_sync(local_log_end, config, store_config)
        elector.max_phys_offset = lambda: end
        role = await elector.bootstrap()
        if not role.master:
            # the master this slave follows, once it recorded its term: the cut needs it
            state = await elector.master_history()
            if state is None:
                return f"master {role.state.master.broker_id} went before it recorded its term"
            role = Role(False, state.epoch, state)  # the term it recorded may be newer
        controller = BrokerController(*role_configs(config, store_config, role), runtime=runtime)
        controller.epoch = controller.registrar.state_version = role.epoch
        controller.require_in_sync_replicas()
        controller.load()  # recovery first: the term's start and the cut need the log's end
        root = store_config.store_path_root_dir
        if role.master:
            if not await start_term(controller, elector, root):
                return f"epoch {role.epoch} ended before it began"
        else:
            controller.truncation = follow_term(controller, role.state, root)
        elector.max_phys_offset = lambda: controller.store.max_phys_offset
        elector.fence = controller.fence
        announce_epoch(controller, elector, role)
        elector.restart = controller.restart
        controller.elector = elector
        elector.store_root = root
        elector.open_client = controller.open_client
        controller.runtime_info.extra.append(elector.runtime_rows)
        controller.runtime_info.extra.append(lambda: epoch_rows(root, controller.truncation))
        await serve(controller, elector)
        return controller.restart_reason
    finally:
        with trio.CancelScope(shield=True):
            await etcd.aclose()


async def start_term(controller: BrokerController, elector: Elector, root: Path) -> bool:
    """A master's term starts at its recovered log's end: in its epoch file, then in etcd."""
    assert elector.role is not None
    start = controller.store.max_phys_offset
    entry = EpochEntry(elector.role.epoch, start)
    epoch_file.save(root, append(_local_epochs(root), entry))
    return await elector.begin_term(start)


def announce_epoch(controller: BrokerController, elector: Elector, role: Role) -> None:
    """The epoch and member id in the HA handshake: a slave says them in its hello; the master
    counts only current SyncStateSet members of its epoch, once each (broker/ha/service.py)."""
    if controller.ha_client is not None:
        controller.ha_client.hello = encode_hello(role.epoch, elector.me)
    service = controller.ha_service
    if service is not None:
        service.epoch, service.member_id = role.epoch, elector.me

        def sync_state_set() -> frozenset[int]:
            current = elector.role
            return current.state.sync_state_set if current is not None else frozenset()

        service.sync_state_set = sync_state_set
        service.on_newer_epoch = controller.fence


def follow_term(
    controller: BrokerController, state: GroupState, root: Path
) -> TruncationReport | None:
    """A slave keeps what its log shares with the master's (by the two epoch histories) and
    cuts the rest, saved aside; its epoch file becomes the master's history."""
    store = controller.store
    history = list(state.epochs)
    keep = epoch_file.consistent_end(_local_epochs(root), store.max_phys_offset, history)
    report = save_and_truncate(store, root, keep, state.epoch)
    epoch_file.save(root, history)
    return report


def local_log_end(config: BrokerConfig, store_config: MessageStoreConfig) -> int:
    """The CommitLog's end after recovery, the store closed again."""
    store = DefaultMessageStore(store_config, store_host=(config.broker_ip1, config.listen_port))
    store.load()
    try:
        return store.max_phys_offset
    finally:
        store.shutdown()


def epoch_rows(root: Path, truncation: object) -> dict[str, str]:
    """The epoch file as ``epoch:startOffset`` pairs, and what start-up cut, if anything."""
    try:
        entries = ",".join(f"{e.epoch}:{e.start_offset}" for e in epoch_file.load(root))
    except EpochFileError as exc:
        entries = f"unreadable: {exc}"
    rows = {"epochEntries": entries}
    if isinstance(truncation, TruncationReport):
        rows["truncatedBytes"] = str(truncation.bytes_cut)
        rows["truncatedTo"] = str(truncation.saved_to)
    return rows


def _local_epochs(root: Path) -> list[EpochEntry]:
    try:
        return epoch_file.load(root)
    except EpochFileError as exc:
        raise StoreError(str(exc)) from None
