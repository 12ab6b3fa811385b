"""HAClient: the slave's side of replication (docs/spec/ha.md §2, §3.4, §3.5).

It connects to the master's HA address (``haMasterAddress`` or what registration learned),
reports its CommitLog max offset at once (RocketMQ waits for the first heartbeat, ~5 s; an
immediate report is compatible and starts the stream sooner), appends every chunk at exactly the
offset it belongs to and reports again. It also reports every ``haSendHeartbeatInterval`` after
its last report, however busy the master keeps the read side (``broker/ha/link.py``). A chunk that does not start where the local log ends
closes the connection; the next one resumes from the local max offset.
"""

from __future__ import annotations

import logging
import ssl
import time
from typing import TYPE_CHECKING, Protocol

import trio

from broker.ha.link import LinkTimers
from broker.ha.protocol import Chunk, ChunkDecoder, ProtocolError, encode_report
from remoting import tls

if TYPE_CHECKING:
    from broker.store.config import MessageStoreConfig
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)

RECEIVE_BYTES = 64 * 1024  # larger recv() sizes cost more in allocation than they save
MAX_CHUNK_BODY = 4 << 20  # RocketMQ's slave read buffer: no master sends more at once
CONNECT_TIMEOUT_S = 5.0
RECONNECT_MIN_S = 0.5
RECONNECT_MAX_S = 5.0


class MasterAddress(Protocol):
    ha_master_addr: str | None
    changed: trio.Event


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad HA master address {addr!r}: expected host:port")
    return host, int(port)


class HAClient:
    def __init__(
        self,
        store: DefaultMessageStore,
        store_config: MessageStoreConfig,
        master: MasterAddress,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.ssl_context = ssl_context  # haUseTLS (broker/tls.py)
        self.store = store
        self.store_config = store_config
        self.master = master
        self.connected_to: str | None = None
        self.last_chunk_at = 0
        self.reported_offset = -1
        self.disconnects = 0  # sessions that ended after connecting, for operators
        # Controller mode: encode_hello(epoch, member id), sent first on every connection.
        self.hello: bytes | None = None
        self._progressed = False

    def status(self) -> dict[str, object]:
        return {
            "haMasterAddr": self.master.ha_master_addr or "",
            "connected": self.connected_to is not None,
            "disconnects": self.disconnects,
            "slaveMaxOffset": self.store.max_phys_offset,
            "lastChunkMillisAgo": now_ms() - self.last_chunk_at if self.last_chunk_at else -1,
        }

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        backoff = RECONNECT_MIN_S
        while True:
            addr = self.master.ha_master_addr
            if not addr:
                with trio.move_on_after(RECONNECT_MAX_S):
                    await self.master.changed.wait()
                continue
            self._progressed = False
            try:
                await self._session(addr)
            except (ProtocolError, tls.TlsHandshakeError) as exc:
                log.warning("HA master %s: %s", addr, exc)
            except (
                OSError,
                ValueError,
                trio.TooSlowError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
            ) as exc:
                log.info("HA master %s unreachable: %s", addr, exc)
            finally:
                if self.connected_to is not None:
                    self.disconnects += 1
                self.connected_to = None
            backoff = RECONNECT_MIN_S if self._progressed else min(backoff * 2, RECONNECT_MAX_S)
            with trio.move_on_after(backoff):  # a new master (auto-failover) is dialled at once
                await self.master.changed.wait()

    async def _session(self, addr: str) -> None:
        """One connection, until it fails (``_progressed`` tells whether data arrived)."""
        host, port = split_addr(addr)
        with trio.fail_after(CONNECT_TIMEOUT_S):
            plain = await trio.open_tcp_stream(host, port)
        stream: trio.abc.Stream = plain
        if self.ssl_context is not None:
            stream = await tls.connect(plain, self.ssl_context, host)  # closes it if it fails
        try:
            self.connected_to = addr
            log.info("connected to HA master %s at offset %d", addr, self.store.max_phys_offset)
            await self._stream(stream)
        finally:
            await tls.close_quietly(stream)  # bounded: TLS's close_notify may not be taken

    async def _stream(self, stream: trio.abc.Stream) -> None:
        config = self.store_config
        timers = LinkTimers.started(
            trio.current_time(),
            heartbeat_ms=config.ha_send_heartbeat_interval,
            expire_ms=config.ha_housekeeping_interval,
        )
        decoder = ChunkDecoder(MAX_CHUNK_BODY)
        if self.hello is not None:
            await stream.send_all(self.hello)
        await self._report(stream, timers)
        while True:
            data = None
            with trio.move_on_at(timers.next_deadline()):
                data = await stream.receive_some(RECEIVE_BYTES)
            now = trio.current_time()
            if data is not None:
                if not data:
                    raise ProtocolError("master closed the connection")
                timers.heard(now)
                self._append(decoder.feed(data))
            elif timers.expired(now):
                raise ProtocolError(
                    f"nothing heard from the master for {timers.silent_for(now):.1f} s"
                )
            # On the write clock, whatever was read (docs/spec/ha.md §3.2): the master's own
            # heartbeats must not silence ours, or it expires the link.
            if self.store.max_phys_offset != self.reported_offset or timers.heartbeat_due(now):
                await self._report(stream, timers)

    def _append(self, chunks: list[Chunk]) -> None:
        store = self.store
        for chunk in chunks:
            own = store.max_phys_offset
            if own != 0 and chunk.offset != own:
                raise ProtocolError(
                    f"master pushed offset {chunk.offset} but the slave's log ends at {own}"
                )
            if not chunk.body:
                continue
            if not store.append_to_commit_log(chunk.offset, chunk.body):
                raise ProtocolError(f"could not append {len(chunk.body)} bytes at {chunk.offset}")
            self._progressed = True
            self.last_chunk_at = now_ms()

    async def _report(self, stream: trio.abc.Stream, timers: LinkTimers) -> None:
        offset = self.store.max_phys_offset
        with trio.move_on_after(timers.expire_s) as timer:
            await stream.send_all(encode_report(offset))
        if timer.cancelled_caught:
            raise ProtocolError(f"the master has not read our report for {timers.expire_s:g} s")
        self.reported_offset = offset
        timers.wrote(trio.current_time())
