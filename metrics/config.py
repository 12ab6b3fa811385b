"""RocketMQ 5's metrics keys (BrokerConfig.metricsExporterType and its kin) as config fields:
a base of BrokerConfig and NamesrvConfig, as TlsKeys is (remoting/tls_config.py).

``metricsExporterType=PROM`` serves Prometheus text at ``http://<host>:<port>/metrics``;
``DISABLE`` (the default) serves nothing. RocketMQ's other exporters (``OTLP_GRPC``, ``LOG``)
push to a collector or a log; this server has neither, and refuses them at start rather than run
without the metrics the operator asked for. Java reads ``metricsPromExporterHost`` empty as
brokerIP1; so do we, and a NameServer reads it as its listenHost.
"""

from __future__ import annotations

import enum

import attrs

from remoting.settings import PORT


class MetricsExporterType(enum.Enum):
    """Java's MetricsExporterType, by name."""

    DISABLE = 0
    OTLP_GRPC = 1
    PROM = 2
    LOG = 3


def _supported(_: object, attribute: attrs.Attribute, value: MetricsExporterType) -> None:
    if value not in (MetricsExporterType.DISABLE, MetricsExporterType.PROM):
        raise ValueError(
            "this server has no OpenTelemetry exporter: use PROM (Prometheus scrapes "
            "/metrics) or DISABLE"
        )


def _host(_: object, attribute: attrs.Attribute, value: str) -> None:
    # empty: the process's own address; a name's resolution is found out by the bind
    if any(c.isspace() or c in "/\\;[]" for c in value) or len(value) > 253:
        raise ValueError("must be an IP address, a host name or empty")


# Not slotted: a config class has TlsKeys (slotted) as a base too.
@attrs.frozen(kw_only=True, slots=False)
class MetricsKeys:
    metrics_exporter_type: MetricsExporterType = attrs.field(
        default=MetricsExporterType.DISABLE, validator=_supported
    )
    metrics_prom_exporter_port: int = attrs.field(default=5557, validator=PORT)
    metrics_prom_exporter_host: str = attrs.field(default="", validator=_host)

    @property
    def metrics_enabled(self) -> bool:
        return self.metrics_exporter_type is MetricsExporterType.PROM
