"""The broker's Prometheus metrics (docs/monitoring.md): what it collects, how lag is measured,
and the service that serves them."""
