"""CONTROLLER_PROMISE (ours, auto-failover: broker/election/promises.py), as extFields.

Request: the asking master's ``brokerName``, ``epoch`` and member id (``masterBrokerId``), and
how long a promise it asks for (``promiseMillis``). Response: SUCCESS with the ``promiseMillis``
granted (0 when refused, the reason in the remark).
"""

from __future__ import annotations

import attrs

from remoting.wire_types import NonNegInt, NonNegLong

MAX_PROMISE_MILLIS = 3_600_000  # controllerHeartBeatTimeoutMills' own bound


@attrs.define
class ControllerPromiseRequestHeader:
    broker_name: str
    epoch: NonNegInt
    master_broker_id: NonNegLong
    promise_millis: NonNegInt


@attrs.define
class ControllerPromiseResponseHeader:
    promise_millis: NonNegInt = 0
