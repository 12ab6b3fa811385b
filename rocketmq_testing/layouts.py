"""Which processes a test cluster runs (pure): the layouts deploy/ defines (``single``,
``2m-2s-async``, ``2m-2s-sync``) and a master/slave ``pair`` cut from them, with store sizes
a test can afford and the user's ``broker_conf`` on top. Ports and paths are filled in when
the cluster starts (rocketmq_testing/cluster.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import attrs

import deploy
from deploy.manifest import ManifestError, load_manifest
from remoting import properties

DEPLOY_DIR = Path(deploy.__file__).resolve().parent

# layout name -> (deploy/ folder, the brokerNames kept, NameServers kept; None: all of them)
LAYOUTS: dict[str, tuple[str, frozenset[str] | None, int | None]] = {
    "single": ("single", None, None),
    "pair": ("2m-2s-async", frozenset({"broker-a"}), 1),
    "pair-sync": ("2m-2s-sync", frozenset({"broker-a"}), 1),
    "2m-2s-async": ("2m-2s-async", None, None),
    "2m-2s-sync": ("2m-2s-sync", None, None),
}

# RocketMQ's defaults preallocate a 1 GiB CommitLog segment and a 420 MB index file, and
# deploy/'s layouts 64 MiB and 42 MB: a test needs neither. These keep every feature (one
# CommitLog segment holds a 4 MiB message, the index still indexes) at a few MiB a broker.
TEST_STORE_CONF: dict[str, str] = {
    "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(6000 * 20),
    "maxHashSlotNum": "50000",
    "maxIndexNum": "200000",
    "flushConsumerOffsetInterval": "1000",
}

# Keys the cluster sets itself: a broker_conf naming one is refused, not silently overridden.
RESERVED_KEYS = frozenset(
    {"listenPort", "haListenPort", "namesrvAddr", "storePathRootDir", "brokerName", "brokerId"}
)


_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.]*")


class LayoutError(ValueError):
    """An unknown layout or a broker_conf the cluster cannot honour; the message says which."""


@attrs.frozen
class ProcessPlan:
    """One process of a test cluster: ``name`` is deploy/'s process name (``broker-a-m``)."""

    name: str
    kind: str  # namesrv | broker
    conf: Mapping[str, str]
    broker_name: str | None = None
    broker_id: int = 0

    @property
    def role(self) -> str:
        """NAMESRV, or the broker's brokerRole (ASYNC_MASTER, SYNC_MASTER, SLAVE)."""
        if self.kind == "namesrv":
            return "NAMESRV"
        return self.conf.get("brokerRole", "ASYNC_MASTER" if self.broker_id == 0 else "SLAVE")


def plan(layout: str, broker_conf: Mapping[str, object] | None = None) -> list[ProcessPlan]:
    """The processes of ``layout``: NameServers first, then masters, then slaves."""
    try:
        folder, keep, namesrvs = LAYOUTS[layout]
    except KeyError:
        raise LayoutError(
            f"unknown layout {layout!r}: one of {', '.join(sorted(LAYOUTS))}"
        ) from None
    overrides = _overrides(broker_conf or {})
    try:
        manifest = load_manifest(DEPLOY_DIR / folder)
    except ManifestError as exc:
        raise LayoutError(f"layout {layout}: {exc}") from None
    out: list[ProcessPlan] = []
    for spec in manifest.start_order():
        if spec.kind == "namesrv":
            if namesrvs is None or sum(p.kind == "namesrv" for p in out) < namesrvs:
                out.append(ProcessPlan(spec.name, "namesrv", _layout_conf(spec.conf)))
            continue
        if keep is not None and spec.broker_name not in keep:
            continue
        conf = {**_layout_conf(spec.conf), **TEST_STORE_CONF, **overrides}
        out.append(
            ProcessPlan(spec.name, "broker", conf, spec.broker_name, int(conf.get("brokerId", "0")))
        )
    return out


def _layout_conf(path: Path) -> dict[str, str]:
    """A layout process's .conf without its metrics keys: mqcluster gives each process a metrics
    port of its own (deploy/manifest.py), a test cluster has none to give, and every process
    would bind the default one."""
    return {k: v for k, v in properties.load(path).items() if not k.startswith("metrics")}


def _overrides(broker_conf: Mapping[str, object]) -> dict[str, str]:
    """broker.conf keys as strings, as a .conf file holds them (booleans in Java's spelling)."""
    reserved = sorted(RESERVED_KEYS & set(broker_conf))
    if reserved:
        raise LayoutError(
            f"broker_conf sets {', '.join(reserved)}: the test cluster chooses these itself"
        )
    out = {}
    for key, value in broker_conf.items():
        text = _conf_value(value)
        if not _KEY.fullmatch(str(key)) or "\n" in text or "\r" in text:
            raise LayoutError(f"broker_conf: {key!r}={text!r} cannot be one line of broker.conf")
        out[key] = text
    return out


def _conf_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def conf_text(values: Mapping[str, object]) -> str:
    return "".join(f"{key}={_conf_value(value)}\n" for key, value in values.items())
