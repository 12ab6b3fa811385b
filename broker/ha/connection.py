"""HAConnection: the master's side of one slave's socket (docs/spec/ha.md §3.2-§3.5).

The reader takes the slave's offset reports; the writer streams CommitLog bytes from where the
slave said it stands. A slave's word is checked before it counts: the first report must name an
offset this master holds, and every later ack must lie within what this connection actually
sent. RocketMQ trusted any ack below its max offset, so a confused slave could make a
SYNC_MASTER acknowledge bytes no slave had; here such a slave is refused and disconnected.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING

import trio

from broker.ha.link import LinkTimers
from broker.ha.protocol import Hello, ProtocolError, ReportDecoder, encode_chunk_header
from remoting.log_limit import log_limited, peer_warnings
from remoting.tls import close_quietly

if TYPE_CHECKING:
    from broker.ha.service import HAService

log = logging.getLogger(__name__)

RECEIVE_BYTES = 64 * 1024
MAX_SEND_BYTES = 1 << 20
LAG_MARKS = 64  # lag_millis precision: the master's end at this many recent reports


class SlaveRefused(ProtocolError):
    """The slave's reported position cannot be a copy of this master's log."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class HAConnection:
    def __init__(self, service: HAService, stream: trio.abc.Stream, peer: str) -> None:
        self.service = service
        self.stream = stream
        self.peer = peer
        self.verified = False
        self.hello: Hello | None = None  # controller mode: the slave's member id and epoch
        self.request_offset = -1
        self.ack_offset = -1
        self.next_offset = -1  # the first byte not yet sent
        self.connected_at = now_ms()
        # lag_*: the latest moment whose whole log the slave is known to hold, and the
        # master's end offset at recent reports (the candidates for that moment, oldest first).
        self.caught_up_at = 0
        self._lag_marks: deque[tuple[int, int]] = deque(maxlen=LAG_MARKS)  # (end, ms)
        self._ready = trio.Event()
        config = service.store_config
        self.timers = LinkTimers.started(
            trio.current_time(),
            heartbeat_ms=config.ha_send_heartbeat_interval,
            expire_ms=config.ha_housekeeping_interval,
        )

    # ------------------------------------------------------------------ status

    def lag_bytes(self) -> int:
        return max(0, self.service.store.max_phys_offset - max(self.ack_offset, 0))

    def lag_millis(self, now: int | None = None) -> int:
        """How long ago the master had no byte the slave lacks now: 0 when caught up, else an
        upper bound on the age of the oldest missing byte, off by at most one report interval
        while the slave trails by fewer than LAG_MARKS reports. (It used to count from the last
        report that matched the master's end exactly, which a slave trailing a busy master by
        a few KiB never sends: the figure grew without bound while the slave kept up.)"""
        if self.lag_bytes() == 0:
            return 0
        now = now_ms() if now is None else now
        return max(0, now - (self.caught_up_at or self.connected_at))

    def lag_track(self, acked: int, master_end: int, now: int) -> None:
        """On each report: an ack that reaches the end the master had at an earlier report
        means the slave holds everything the master had at that moment."""
        marks = self._lag_marks
        while marks and marks[0][0] <= acked:
            self.caught_up_at = marks.popleft()[1]
        if acked >= master_end:
            self.caught_up_at = now
            marks.clear()
        elif not marks or marks[-1][0] < master_end:
            marks.append((master_end, now))

    # ------------------------------------------------------------------ reports

    def on_report(self, offset: int) -> None:
        store = self.service.store
        max_offset = store.max_phys_offset
        if not self.verified:
            self._handshake(offset, max_offset, store.min_phys_offset)
        elif offset > self.next_offset:
            raise SlaveRefused(
                f"slave {self.peer} acked offset {offset} but was only sent up to "
                f"{self.next_offset}: ack ignored, connection closed"
            )
        if offset > self.ack_offset:
            self.ack_offset = offset
        self.lag_track(offset, max_offset, now_ms())
        self.service.on_ack(offset)

    def _handshake(self, offset: int, max_offset: int, min_offset: int) -> None:
        if offset > max_offset:
            raise SlaveRefused(
                f"slave {self.peer} reports offset {offset} beyond this master's max offset "
                f"{max_offset}: its CommitLog is not a copy of this master's (was the master's "
                f"store replaced?); refusing it"
            )
        if offset and offset < min_offset:
            raise SlaveRefused(
                f"slave {self.peer} needs offset {offset} but this master's CommitLog starts at "
                f"{min_offset} (older files were deleted); rebuild the slave from a fresh store"
            )
        self.request_offset = offset
        if offset == 0:
            # A new slave starts at the master's current segment (RocketMQ does the same).
            size = self.service.store_config.mapped_file_size_commit_log
            offset = max_offset - max_offset % size
        self.next_offset = offset
        self.verified = True
        self.service.links_version += 1
        log.info(
            "slave %s connected: reported %d, streaming from %d",
            self.peer,
            self.request_offset,
            offset,
        )
        self._ready.set()

    # ------------------------------------------------------------------ tasks

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read, nursery.cancel_scope)
                nursery.start_soon(self._write)
        except* SlaveRefused as group:
            # a peer's claim, not our bug: a WARNING, a few per host and minute (anyone who
            # reaches the HA port can make one)
            for exc in group.exceptions:
                self._warn("%s", exc)
        except* ProtocolError as group:
            for exc in group.exceptions:
                self._warn("slave %s: %s", self.peer, exc)
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as group:
            log.info("slave %s disconnected: %s", self.peer, group.exceptions[0])
        finally:
            await close_quietly(self.stream)  # bounded: TLS's close_notify may not be taken

    def _warn(self, message: str, *args: object) -> None:
        host = self.peer.rpartition(":")[0]
        log_limited(log, peer_warnings, ("ha", host), logging.WARNING, message, *args)

    async def _read(self, scope: trio.CancelScope) -> None:
        """Reports until the slave closes; a slave silent for ``haHousekeepingInterval`` is
        gone (a live one reports at least every ``haSendHeartbeatInterval``)."""
        decoder = ReportDecoder()
        timers = self.timers
        while True:
            data = None
            with trio.move_on_at(timers.last_read + timers.expire_s):
                data = await self.stream.receive_some(RECEIVE_BYTES)
            now = trio.current_time()
            if data is None:
                raise ProtocolError(f"nothing heard for {timers.silent_for(now):.1f} s: closing")
            timers.heard(now)
            if not data:
                log.info("slave %s closed the connection", self.peer)
                scope.cancel()
                return
            offsets = decoder.feed(data)
            if self.hello is None and decoder.hello is not None:
                self.hello = decoder.hello
                self.service.on_hello(self)
            if offsets:
                self.on_report(offsets[-1])

    def _next_frames(self, batch: int) -> list[bytes | memoryview]:
        """Header + body pairs for everything there is to send, up to ``MAX_SEND_BYTES``: each
        chunk at most ``batch`` bytes and within one segment (docs/spec/ha.md §3.3), several chunks
        per send so the writer keeps up with eight producers while taking one turn of the loop."""
        store = self.service.store
        parts: list[bytes | memoryview] = []
        total = 0
        while total < MAX_SEND_BYTES:
            data = store.get_commit_log_data(self.next_offset)
            if data is None and self.next_offset < store.min_phys_offset:
                raise SlaveRefused(
                    f"slave {self.peer} needs offset {self.next_offset}, already deleted here"
                )
            size = min(len(data), batch) if data is not None else 0
            if not size:
                break
            parts += (encode_chunk_header(self.next_offset, size), data[:size])
            # Advanced before the send returns: the slave may ack these bytes before this
            # task runs again.
            self.next_offset += size
            total += size
        return parts

    async def _write(self) -> None:
        await self._ready.wait()
        service = self.service
        batch = service.store_config.ha_transfer_batch_size
        timers = self.timers
        while True:
            parts = self._next_frames(batch)
            if parts:
                # One copy out of the mapped files before awaiting: a segment may be unmapped
                # by cleanup while the send waits, and one buffer means one syscall.
                frame = b"".join(parts)
                del parts
                await self._send(frame)
                continue
            arrived = service.new_data
            service.new_data_waiters += 1
            try:
                with trio.move_on_at(timers.last_write + timers.heartbeat_s):
                    await arrived.wait()
            finally:
                service.new_data_waiters -= 1
            if timers.heartbeat_due(trio.current_time()):
                await self._send(encode_chunk_header(self.next_offset, 0))

    async def _send(self, data: bytes) -> None:
        timers = self.timers
        with trio.move_on_after(timers.expire_s) as timer:
            await self.stream.send_all(data)
        if timer.cancelled_caught:
            raise ProtocolError(f"has not read for {timers.expire_s:g} s: closing")
        timers.wrote(trio.current_time())
