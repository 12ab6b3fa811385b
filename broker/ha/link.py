"""LinkTimers: when one end of an HA link must speak, and when it may give up on the other
(docs/spec/ha.md §3.2, §3.3, §3.5). Pure: the caller passes the time (Trio's clock in the services,
a mock clock in tests).

Each end keeps two clocks, and the difference matters:

- *heartbeat* runs from this end's last **write**. RocketMQ's slave reports its offset when
  ``haSendHeartbeatInterval`` has passed since it last wrote, whatever it has read
  (``HAClient.isTimeToReportOffset``), and the master sends an empty chunk on the same rule. A
  heartbeat that waited for a quiet *read* never fires while the peer heartbeats to us, and a
  peer that hears nothing from us closes the link.
- *expiry* runs from this end's last **read**: a link is dead when the peer stopped speaking for
  ``haHousekeepingInterval``, and only then. Both ends heartbeat, so an idle healthy link never
  expires. (RocketMQ's slave measures its housekeeping from its own last write, which only
  notices a write that fails; ours notices a master that went silent.)
"""

from __future__ import annotations

import attrs


@attrs.define
class LinkTimers:
    heartbeat_s: float  # haSendHeartbeatInterval
    expire_s: float  # haHousekeepingInterval
    last_read: float
    last_write: float

    @classmethod
    def started(cls, now: float, *, heartbeat_ms: int, expire_ms: int) -> LinkTimers:
        return cls(heartbeat_ms / 1000, expire_ms / 1000, now, now)

    def heard(self, now: float) -> None:
        self.last_read = now

    def wrote(self, now: float) -> None:
        self.last_write = now

    def heartbeat_due(self, now: float) -> bool:
        return now - self.last_write >= self.heartbeat_s

    def silent_for(self, now: float) -> float:
        return now - self.last_read

    def expired(self, now: float) -> bool:
        return self.silent_for(now) >= self.expire_s

    def next_deadline(self) -> float:
        """The next moment something is due: a heartbeat to send or the peer's expiry."""
        return min(self.last_write + self.heartbeat_s, self.last_read + self.expire_s)
