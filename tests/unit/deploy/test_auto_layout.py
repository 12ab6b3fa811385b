"""The auto-failover layout (deploy/2m-4s-auto): etcd starts first, and every broker is told
where the layout's etcd is; the members' confs pass the broker's own checks."""

from __future__ import annotations

from pathlib import Path

from broker.config import load_broker_config
from deploy.manifest import load_manifest
from remoting import properties

LAYOUT = Path(__file__).resolve().parents[3] / "deploy" / "2m-4s-auto"


def test_etcd_first_then_namesrvs_then_the_first_member_of_each_group():
    manifest = load_manifest(LAYOUT)
    order = [p.name for p in manifest.start_order()]
    assert order[:3] == ["etcd-1", "namesrv-1", "namesrv-2"]
    assert order.index("broker-a-1") < order.index("broker-a-2")
    assert manifest.etcd_endpoints == "http://127.0.0.1:31379"
    assert manifest.shifted(100).etcd_endpoints == "http://127.0.0.1:31479"
    etcd = manifest.processes[0]
    assert etcd.kind == "etcd" and etcd.ports == [31379, 31380] and etcd.broker_name is None


def test_each_member_gets_the_etcd_endpoints_and_passes_the_checks(tmp_path):
    manifest = load_manifest(LAYOUT)
    members = [p for p in manifest.processes if p.kind == "broker"]
    assert len(members) == 6
    for spec in members:
        values = properties.loads(manifest.effective_conf(spec, tmp_path))
        assert values["controllerEtcdEndpoints"] == "http://127.0.0.1:31379"
        broker, store = load_broker_config(values, warn=False)
        assert broker.enable_controller_mode and store.min_in_sync_replicas == 2
