"""The web console (mqconsole): pure parts, its admin calls, HTTP against real processes, and a real browser."""
