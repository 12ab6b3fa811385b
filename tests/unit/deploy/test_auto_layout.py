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


def test_the_production_layout_runs_three_etcd_members_as_one_cluster(tmp_path, monkeypatch):
    from deploy.cluster import etcd_argv

    monkeypatch.setattr("deploy.cluster.shutil.which", lambda name: f"/usr/bin/{name}")

    manifest = load_manifest(LAYOUT.parent / "2m-4s-auto-3etcd")
    members = [p for p in manifest.processes if p.kind == "etcd"]
    assert [p.name for p in manifest.start_order()[:3]] == ["etcd-1", "etcd-2", "etcd-3"]
    endpoints = "http://127.0.0.1:23379,http://127.0.0.1:23381,http://127.0.0.1:23383"
    assert manifest.etcd_endpoints == endpoints
    ports = [port for p in manifest.processes for port in p.ports]
    assert len(ports) == len(set(ports))  # no member's peer port is another's client port
    for spec in (p for p in manifest.processes if p.kind == "broker"):
        values = properties.loads(manifest.effective_conf(spec, tmp_path))
        assert values["controllerEtcdEndpoints"] == endpoints
    argv = etcd_argv(members[1], tmp_path / "etcd-2", members, manifest.name)
    assert (
        "--initial-cluster=etcd-1=http://127.0.0.1:23380,etcd-2=http://127.0.0.1:23382,"
        "etcd-3=http://127.0.0.1:23384" in argv
    )
    assert "--listen-client-urls=http://127.0.0.1:23381" in argv
