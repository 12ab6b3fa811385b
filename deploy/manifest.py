"""Cluster manifests (pure): a layout folder holds ``cluster.toml`` and one ``.conf`` per
process, in the shape RocketMQ operators know. mqcluster fills in what depends on where the
layout runs: ``storePathRootDir``, ``kvConfigPath`` and ``logFile`` under the base directory,
and ``namesrvAddr`` from the manifest's NameServers, so two layouts run side by side."""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs

from remoting import properties

ROLES = {"etcd", "namesrv", "master", "slave"}


class ManifestError(ValueError):
    """A manifest or one of its config files is wrong; the message names the problem."""


@attrs.frozen
class ProcessSpec:
    name: str
    role: str  # etcd | namesrv | master | slave (auto-failover layouts: the start order)
    conf: Path
    port: int
    broker_name: str | None = None

    @property
    def kind(self) -> str:
        return self.role if self.role in ("etcd", "namesrv") else "broker"

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_port(self) -> int:
        """Where its /metrics listens when its conf sets metricsExporterType=PROM: the next
        port a NameServer, the one past the HA port a broker (deploy/monitoring/prometheus/)."""
        return self.port + 1 if self.kind == "namesrv" else self.port + 2

    @property
    def ports(self) -> list[int]:
        """Every port the process binds: a broker also has its VIP (-2) and HA (+1) ports;
        each its metrics port."""
        if self.kind == "etcd":
            return [self.port, self.port + 1]  # client, peer
        if self.kind == "namesrv":
            return [self.port, self.metrics_port]
        return [self.port - 2, self.port, self.port + 1, self.metrics_port]


@attrs.frozen
class Manifest:
    name: str
    folder: Path
    processes: list[ProcessSpec]

    @property
    def namesrv_addr(self) -> str:
        return ";".join(p.addr for p in self.processes if p.role == "namesrv")

    @property
    def etcd_endpoints(self) -> str:
        return ",".join(f"http://{p.addr}" for p in self.processes if p.role == "etcd")

    def shifted(self, offset: int) -> Manifest:
        """The same layout with every port moved by ``offset`` (a second copy side by side)."""
        if not offset:
            return self
        moved = [attrs.evolve(p, port=p.port + offset) for p in self.processes]
        bad = [p.name for p in moved if not 3 <= p.port <= 65534]
        if bad:
            raise ManifestError(f"port offset {offset} puts {bad} outside 3..65534")
        return attrs.evolve(self, processes=moved)

    def start_order(self) -> list[ProcessSpec]:
        """etcd, NameServers, then masters, then slaves."""
        rank = {"etcd": 0, "namesrv": 1, "master": 2, "slave": 3}
        return sorted(self.processes, key=lambda p: rank[p.role])

    def master_of(self, slave: ProcessSpec) -> ProcessSpec | None:
        for p in self.processes:
            if p.role == "master" and p.broker_name == slave.broker_name:
                return p
        return None

    def with_promotions(self, promotions: dict[str, dict[str, str]]) -> Manifest:
        """Roles after ``mqcluster promote``: per brokerName, which process is now the master."""
        processes = []
        for p in self.processes:
            done = promotions.get(p.broker_name or "")
            if done and p.name == done["master"]:
                p = attrs.evolve(p, role="master")
            elif done and p.name == done["slave"]:
                p = attrs.evolve(p, role="slave")
            processes.append(p)
        return attrs.evolve(self, processes=processes)

    def effective_conf(
        self, spec: ProcessSpec, base_dir: Path, overrides: dict[str, str] | None = None
    ) -> str:
        values = properties.loads(spec.conf.read_text())
        values.update(overrides or {})
        # the process writes and rotates its own log (remoting/logs.py): mqcluster's `up`
        # returns while the processes run on, so nothing of mqcluster's could rotate a pipe
        if spec.kind == "etcd":
            return "".join(f"{k}={v}\n" for k, v in values.items())  # etcd takes flags
        values["logFile"] = str(base_dir / "logs" / f"{spec.name}.log")
        if values.get("metricsExporterType") == "PROM":
            values["metricsPromExporterPort"] = str(spec.metrics_port)
        if spec.kind == "namesrv":
            values["listenPort"] = str(spec.port)
            values["kvConfigPath"] = str(base_dir / "store" / spec.name / "kvConfig.json")
        else:
            values["listenPort"] = str(spec.port)
            values["namesrvAddr"] = self.namesrv_addr
            if values.get("enableControllerMode") == "true" and self.etcd_endpoints:
                values["controllerEtcdEndpoints"] = self.etcd_endpoints
            values["storePathRootDir"] = str(base_dir / "store" / spec.name)
        return "".join(f"{k}={v}\n" for k, v in values.items())


def load_manifest(folder: Path) -> Manifest:
    path = folder / "cluster.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ManifestError(f"{folder}: no cluster.toml (is this a layout folder?)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: {exc}") from None
    processes = []
    for index, entry in enumerate(data.get("process", [])):
        where = f"{path}: process #{index + 1}"
        try:
            name, role, conf, port = entry["name"], entry["role"], entry["conf"], entry["port"]
        except KeyError as exc:
            raise ManifestError(f"{where}: missing key {exc.args[0]!r}") from None
        if role not in ROLES:
            raise ManifestError(
                f"{where} ({name}): role must be one of {sorted(ROLES)}, not {role!r}"
            )
        if not isinstance(port, int) or not 3 <= port <= 65534:
            raise ManifestError(f"{where} ({name}): bad port {port!r}")
        conf_path = folder / conf
        if not conf_path.is_file():
            raise ManifestError(f"{where} ({name}): config file {conf_path} not found")
        broker_name = None
        if role in ("master", "slave"):
            broker_name = properties.loads(conf_path.read_text()).get("brokerName")
            if not broker_name:
                raise ManifestError(f"{conf_path}: brokerName is not set")
        processes.append(ProcessSpec(name, role, conf_path, port, broker_name))
    if not any(p.role == "namesrv" for p in processes):
        raise ManifestError(f"{path}: a layout needs at least one NameServer")
    names = [p.name for p in processes]
    if len(set(names)) != len(names):
        raise ManifestError(f"{path}: process names must be unique: {names}")
    ports = [port for p in processes for port in p.ports]
    clashes = sorted({port for port in ports if ports.count(port) > 1})
    if clashes:
        raise ManifestError(f"{path}: ports used twice: {clashes}")
    return Manifest(data.get("name", folder.name), folder, processes)
