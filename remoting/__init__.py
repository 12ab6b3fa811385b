"""The RocketMQ 4.x remoting protocol shared by every process (spec/remoting.md).

Imports none of namesrv, broker or client.
"""
