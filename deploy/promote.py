"""``mqcluster promote``: a pair's slave made its master, the old master fenced at every
NameServer (deploy/README.md, "Promoting a slave")."""

from __future__ import annotations

import json
import time

from deploy.cluster import SYNC_TIMEOUT_S, Cluster
from deploy.daemon import POLL_S, ClusterError
from deploy.probes import put_kv_everywhere, runtime_infos
from remoting import constants as K


def promote(cluster: Cluster, broker_name: str, *, force: bool = False) -> None:
    """Make ``broker_name``'s slave its master: refuse while the master answers (unless
    ``force``, which stops it), wait until the slave dispatched all it received, fence the
    name at every NameServer, restart the slave as master. The old master's store is set
    aside: it may only rejoin as a slave, from scratch."""
    pair = [p for p in cluster.manifest.processes if p.broker_name == broker_name]
    master = next((p for p in pair if p.role == "master"), None)
    slave = next((p for p in pair if p.role == "slave"), None)
    if master is None or slave is None:
        raise ClusterError(f"{broker_name} has no master/slave pair in {cluster.manifest.name}")
    if runtime_infos([master.addr]):
        if not force:
            raise ClusterError(
                f"the master {master.name} ({master.addr}) still answers: promoting now would "
                "make two masters; stop it first, or pass --force to stop it"
            )
        cluster.out(f"stopping {master.name} (--force)")
        cluster.daemons.stop_process(master)
    deadline = time.monotonic() + SYNC_TIMEOUT_S
    while True:
        info = runtime_infos([slave.addr]).get(slave.addr)
        if info is None:
            raise ClusterError(f"the slave {slave.name} ({slave.addr}) does not answer")
        if info.get("dispatchBehindBytes") == "0":
            break
        if time.monotonic() > deadline:
            raise ClusterError(f"{slave.name} still has undispatched bytes; try again")
        time.sleep(POLL_S)
    cluster.out(
        f"{slave.name} holds the CommitLog up to {info['commitLogMaxOffset']} "
        "(anything the old master had beyond it is lost in ASYNC mode)"
    )
    fenced = put_kv_everywhere(cluster.manifest, K.FENCE_NAMESPACE, broker_name, slave.addr)
    if not fenced:
        raise ClusterError("no NameServer accepted the fence: not promoting")
    cluster.out(f"fenced {broker_name} to {slave.addr} on {', '.join(fenced)}")
    promotions = cluster.promotions()
    promotions[broker_name] = {"master": slave.name, "slave": master.name}
    cluster.base.mkdir(parents=True, exist_ok=True)
    cluster.promotions_path.write_text(json.dumps(promotions, indent=2))
    old_store = cluster.base / "store" / master.name
    if old_store.exists():
        aside = old_store.with_name(f"{master.name}.replaced-{int(time.time())}")
        old_store.rename(aside)
        cluster.out(f"old master's store set aside: {aside}")
    cluster.daemons.stop_process(slave)
    cluster.manifest = cluster.layout.with_promotions(promotions)
    cluster.start_one(slave.name)
    cluster.out(
        f"{broker_name}: {slave.name} is the master now; {master.name} may rejoin as a slave"
    )
