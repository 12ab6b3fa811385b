"""The RocketMQ 4.x remoting protocol shared by every process (docs/spec/remoting.md).

Imports none of namesrv, broker or client.
"""
