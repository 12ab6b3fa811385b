"""HAService: the master's replication endpoint and SYNC_MASTER's group transfer
(docs/spec/ha.md §4, §5).

``wait_replicated(end)`` parks a sender until some slave has acked ``end``. Waiters sit in a heap
ordered by offset; each ack pops and wakes every waiter it covers at once, so a burst of sends
costs one wake-up per ack, not a poll per message.

A slave that has just dropped is waited for, not written off: for ``2 x haSendHeartbeatInterval``
after the last slave went away (a live slave reconnects within its 5 s backoff), a send parks as
if the slave were there and is answered PUT_OK when the returning slave's ack covers it within
the send's budget (``syncFlushTimeout``). Only when no slave came back by then is it answered
SLAVE_NOT_AVAILABLE, which RocketMQ answers at once. Past that window, and on a master no slave
ever reached, the answer is immediate, as in RocketMQ.

In controller mode (``epoch`` set) a replica is a SyncStateSet member, not a connection: each
slave says its member id and epoch in its hello (protocol.py), and only members of the current
SyncStateSet at this master's epoch count, once each however many connections they hold
(``replica_count``, ``_kth_ack``). A hello of a newer epoch means this master's term is over.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from broker.ha.connection import HAConnection
from broker.store.slotted import Slotted
from broker.store.types import PutMessageStatus
from remoting.tls import TlsServer

if TYPE_CHECKING:
    from broker.store.config import MessageStoreConfig
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)


class HAService(Slotted):
    # a counter of the store's plain_idle, read by plain_pass.c from its slot
    # (broker/store/slotted.py)
    __slots__ = ("new_data_waiters",)

    def __init__(
        self,
        store: DefaultMessageStore,
        store_config: MessageStoreConfig,
        host: str,
        port: int,
        *,
        tls: TlsServer | None = None,
    ) -> None:
        self.store = store
        self.store_config = store_config
        self.host, self.port = host, port
        self.tls = tls  # haUseTLS (broker/tls.py): only TLS slaves
        self.connections: set[HAConnection] = set()
        self.push2slave_max_offset = 0
        # Slaves that must ack a SYNC send (minInSyncReplicas - 1 in controller mode, else 1);
        # replicated_offset is what that many slaves hold (with 1: push2slave_max_offset).
        self.acks_needed = 1
        self.replicated_offset = 0
        self.new_data = trio.Event()
        self.new_data_waiters = 0  # Event.statistics() per put cost more than a counter
        self._waiters: list[tuple[int, int, trio.Event]] = []
        self.slave_lost_at: float | None = None  # Trio time the last verified slave went away
        self.disconnects = 0  # verified slaves lost, for operators (haSlaveDisconnects)
        self._sequence = itertools.count()
        # Controller mode (broker/election/startup.py): this master's epoch and member id, and
        # the SyncStateSet as last read from etcd; 0 = not in controller mode.
        self.epoch = 0
        self.member_id = 0
        self.sync_state_set: Callable[[], frozenset[int]] = frozenset
        self.on_newer_epoch: Callable[[str], None] = lambda reason: None
        # replica_count is asked on every SYNC send: kept until a link or the set changes
        self.links_version = 0
        self._count_key: tuple[int, frozenset[int] | None] = (-1, None)
        self._count = 0

    # ------------------------------------------------------------------ bookkeeping

    @property
    def connection_count(self) -> int:
        """Slaves whose handshake offset was checked; only they can make a send wait."""
        return sum(1 for connection in self.connections if connection.verified)

    def counts(self, connection: HAConnection) -> bool:
        """Whether this connection's acks may acknowledge a SYNC send."""
        if not connection.verified:
            return False
        if not self.epoch:
            return True
        hello = connection.hello
        return (
            hello is not None
            and hello.epoch == self.epoch
            and hello.member_id != self.member_id
            and hello.member_id in self.sync_state_set()
        )

    def _replica_acks(self) -> list[int]:
        """Each counted replica's ack: per connection, or per member in controller mode."""
        if not self.epoch:
            return [c.ack_offset for c in self.connections if c.verified]
        best: dict[int, int] = {}
        for c in self.connections:
            if self.counts(c):
                assert c.hello is not None
                best[c.hello.member_id] = max(best.get(c.hello.member_id, -1), c.ack_offset)
        return list(best.values())

    @property
    def replica_count(self) -> int:
        """Replicas a SYNC send can count on (distinct SyncStateSet members in controller
        mode)."""
        if not self.epoch:
            return self.connection_count
        members = self.sync_state_set()
        version, seen = self._count_key
        if version != self.links_version or seen is not members:
            self._count = len(self._replica_acks())
            self._count_key = (self.links_version, members)
        return self._count

    def on_hello(self, connection: HAConnection) -> None:
        hello = connection.hello
        assert hello is not None
        self.links_version += 1
        if self.epoch and hello.epoch > self.epoch:
            self.on_newer_epoch(
                f"FENCED: slave {connection.peer} (member {hello.member_id}) follows epoch "
                f"{hello.epoch}; this master's epoch {self.epoch} is over"
            )

    def notify_new_data(self) -> None:
        """Called by the store after every put: wakes idle connection writers (and costs
        nothing when none waits, the usual case under load and on a master without slaves)."""
        if self.new_data_waiters:
            event, self.new_data = self.new_data, trio.Event()
            event.set()

    def on_ack(self, offset: int) -> None:
        if self.acks_needed > 1 or self.epoch:
            self.push2slave_max_offset = max(self.push2slave_max_offset, offset)
            offset = self._kth_ack()
            if offset <= self.replicated_offset:
                return
        elif offset <= self.push2slave_max_offset:
            return
        else:
            self.push2slave_max_offset = offset
        self.replicated_offset = offset
        waiters = self._waiters
        while waiters and waiters[0][0] <= offset:
            heapq.heappop(waiters)[2].set()

    def _kth_ack(self) -> int:
        """The offset at least ``acks_needed`` verified slaves acked (0: fewer slaves)."""
        acks = sorted(self._replica_acks(), reverse=True)
        return acks[self.acks_needed - 1] if len(acks) >= self.acks_needed else 0

    def is_slave_ok(self, end_offset: int) -> bool:
        return self.replica_count >= self.acks_needed and self._within_fallbehind(end_offset)

    def slave_may_return(self, end_offset: int) -> bool:
        """No slave now, but one dropped so recently that it is probably reconnecting."""
        if self.slave_lost_at is None or self.connection_count > 0:
            return False
        window_s = 2 * self.store_config.ha_send_heartbeat_interval / 1000
        recent = trio.current_time() - self.slave_lost_at < window_s
        return recent and self._within_fallbehind(end_offset)

    def _within_fallbehind(self, end_offset: int) -> bool:
        fallbehind_max = self.store_config.ha_slave_fallbehind_max
        return end_offset - self.replicated_offset < fallbehind_max

    async def wait_replicated(self, end_offset: int, timeout_s: float) -> PutMessageStatus:
        if self.replicated_offset >= end_offset and self.replica_count >= self.acks_needed:
            return PutMessageStatus.PUT_OK
        if not self.is_slave_ok(end_offset) and not self.slave_may_return(end_offset):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        event = trio.Event()
        waiter = (end_offset, next(self._sequence), event)
        heapq.heappush(self._waiters, waiter)
        with trio.move_on_after(timeout_s if timeout_s > 0 else math.inf):
            await event.wait()
            return PutMessageStatus.PUT_OK
        if event.is_set():  # acked between the deadline and this task running again
            return PutMessageStatus.PUT_OK
        # Timeouts are rare and few wait at once: give the entry back now rather than keep it
        # until an ack that may never come.
        self._waiters.remove(waiter)
        heapq.heapify(self._waiters)
        if self.replica_count < self.acks_needed:
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        return PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    def slaves(self) -> list[dict[str, object]]:
        """Per-slave status for GET_BROKER_RUNTIME_INFO and ``mqadmin haStatus``.

        ``inSync`` has RocketMQ 5's haStatus meaning: the slave trails by less than
        ``haSlaveFallbehindMax`` bytes (``inSyncMaxLagBytes``), so a SYNC_MASTER send waits for
        its ack (is_slave_ok); it says nothing about time. ``lagMillis`` is time: the master
        had none of the bytes the slave lacks that long ago (0 when it lacks none)."""
        fall_behind_max = self.store_config.ha_slave_fallbehind_max
        out: list[dict[str, object]] = []
        for connection in sorted(self.connections, key=lambda c: c.peer):
            if not connection.verified:
                continue
            lag_bytes = connection.lag_bytes()
            hello = {}
            if connection.hello is not None:
                hello = {
                    "memberId": connection.hello.member_id,
                    "epoch": connection.hello.epoch,
                    "countsForInSync": self.counts(connection),
                }
            out.append(
                {
                    **hello,
                    "addr": connection.peer,
                    "ackOffset": connection.ack_offset,
                    "lagBytes": lag_bytes,
                    "lagMillis": connection.lag_millis() if lag_bytes else 0,
                    "inSync": lag_bytes < fall_behind_max,
                    "inSyncMaxLagBytes": fall_behind_max,
                }
            )
        return out

    # ------------------------------------------------------------------ serving

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(self.port, host=self.host or None)
        port = listeners[0].socket.getsockname()[1]
        log.info("HA service listening on port %d", port)
        async with trio.open_nursery() as nursery:
            task_status.started(port)
            await trio.serve_listeners(self._serve, listeners, handler_nursery=nursery)

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            host, port = stream.socket.getpeername()[:2]
        except OSError:
            await stream.aclose()
            return
        peer = f"{host}:{port}"
        served: trio.abc.Stream | None = stream
        if self.tls is not None:
            # a slave speaks first (its offset report): it has that long to start
            expire_s = self.store_config.ha_housekeeping_interval / 1000
            served = await self.tls.accept(stream, peer, expire_s)
        if served is not None:
            await self.serve_slave(served, peer)

    async def serve_slave(self, stream: trio.abc.Stream, peer: str) -> None:
        """One slave's connection, until it ends."""
        connection = HAConnection(self, stream, peer)
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)
            self.links_version += 1
            if connection.verified:
                self.disconnects += 1
                if self.connection_count == 0:
                    self.slave_lost_at = trio.current_time()
