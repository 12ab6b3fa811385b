"""Start-up in controller mode (``enableControllerMode=true``): the role comes from etcd before
the broker is built, and a role change is a restart of the whole broker (broker/__main__.py).

A master registers as brokerId 0 (what every 4.x client and NameServer expects of a master);
a slave registers with its member id and dials the HA address etcd names, never one a
NameServer's possibly older route offers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import attrs
import trio

from broker.config import BrokerConfig
from broker.controller import BrokerController
from broker.election.elector import Elector, ElectorConfig, Role
from broker.election.etcd import EtcdClient
from broker.election.group_state import Member
from broker.store.config import BrokerRole, MessageStoreConfig
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
        role = await elector.bootstrap()
        role_config, role_store_config = role_configs(config, store_config, role)
        controller = BrokerController(role_config, role_store_config, runtime=runtime)
        controller.epoch = role.epoch
        elector.max_phys_offset = lambda: controller.store.max_phys_offset
        elector.fence = controller.fence
        elector.restart = controller.restart
        elector.follow = lambda master: controller.follow_master(master.addr, master.ha_addr)
        controller.elector = elector
        await serve(controller, elector)
        return controller.restart_reason
    finally:
        with trio.CancelScope(shield=True):
            await etcd.aclose()
