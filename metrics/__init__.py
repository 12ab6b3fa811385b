"""Prometheus metrics shared by the broker and the NameServer: RocketMQ 5's keys, the text
format, the HTTP endpoint and what every process reports about itself (docs/monitoring.md)."""
