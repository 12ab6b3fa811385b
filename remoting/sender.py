"""OutboundSender: a server's replies written by a native thread (remoting/native/sender/, the
extension module remoting._sender).

On a busy server a third of the event loop went into ``sendmsg``: on loopback the call runs the
receiver's TCP stack and wakes it, and in a VM that wake-up is an expensive interrupt. With a
sender, ``Connection.send_nowait`` only queues the reply's buffers (held, not copied); just
before the loop waits for I/O, ``kick`` writes everything queued in that pass right there, a
``sendmsg`` per connection with the GIL released, while the thread sleeps: waking the thread
cost more than the writes it took over (8 sync senders: a fifth of the broker's CPU per
message). The thread takes what the kernel does not take at once, and the passes that find it
awake.

A connection's bytes leave in order; what the kernel cannot take waits in the thread, and a
connection with more than its high-water mark queued is told when it has drained. The thread
writes to the connection's own descriptor, and becomes its owner when the connection goes
(``remove``): the number cannot be reused for another socket while the thread may still write.

Servers use one when the module is built and not switched off (ROCKETMQ_TRIO_NO_SENDER=1, or
ROCKETMQ_TRIO_PURE=1 for every native module; remoting/native_loader.py); clients, and servers
without it, write inline. It is a module of its own: a stale or missing record codec or store
twin does not turn it off, nor it them.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import trio

from remoting.native_loader import load

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

ABI_VERSION = 3
SWITCH = "ROCKETMQ_TRIO_NO_SENDER"
NAMES = ("Sender",)


@functools.cache
def native_sender() -> ModuleType | None:
    """remoting._sender, or None; loaded (and a fallback logged) the first time a server asks,
    so clients, which never write from a thread, say nothing about it."""
    return load("remoting._sender", abi_version=ABI_VERSION, switch=SWITCH, names=NAMES)


class DrainListener(Protocol):
    def on_drained(self) -> None: ...


class _KickBeforeIOWait(trio.abc.Instrument):
    def __init__(self, kick: Callable[[float], None]) -> None:
        # The native kick is the hook itself (it takes and ignores the wait's timeout): Trio
        # calls it before every I/O wait, and a method calling it was a Python frame per wait.
        self.before_io_wait = kick  # type: ignore[method-assign]


class OutboundSender:
    # The native calls a lone request's reply makes from C (remoting/native/codec/lone.c), read
    # at their offsets; the rest are ordinary attributes.
    __slots__ = ("__dict__", "send", "write_now")

    def __init__(self) -> None:
        native = native_sender()
        assert native is not None
        self._native = native.Sender()
        self._watching: dict[int, DrainListener] = {}
        self.add = self._native.add
        # send(handle, buffers) -> the bytes the connection has queued now; OSError once a
        # write of it failed. Bound straight to the native call: it runs for every reply.
        self.send: Callable[[int, Sequence[Any]], int] = self._native.send
        # send_each(ids, frames) -> each send(ids[i], (frames[i],))'s answer or exception: a
        # selector round's replies in one call (remoting/writes.py reply_round).
        self.send_each: Callable[[list[int], list[Any]], list[Any]] = self._native.send_each
        self.pending = self._native.pending
        self.write_now = self._native.write_now
        self.kick = self._native.kick

    @staticmethod
    def available() -> bool:
        return native_sender() is not None

    def watch(self, handle: int, level: int, listener: DrainListener) -> bool:
        """Call ``listener.on_drained()`` once the connection's queued bytes are <= ``level``
        (or its writes failed). False when that is already so."""
        if not self._native.watch(handle, level):
            return False
        self._watching[handle] = listener
        return True

    def remove(self, handle: int, fd: int) -> bool:
        """No more sends, and the connection's descriptor ``fd`` is the thread's: what is
        queued leaves if the kernel takes it at once, then the thread closes it. False (the
        caller keeps ``fd``) once the sender has stopped."""
        self._watching.pop(handle, None)
        return self._native.remove(handle, fd)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Kick the thread before every I/O wait of this Trio run and deliver drain notices;
        on exit the thread writes what the kernel takes and stops."""
        instrument = _KickBeforeIOWait(self._native.kick)
        trio.lowlevel.add_instrument(instrument)
        try:
            task_status.started()
            while True:
                await trio.lowlevel.wait_readable(self._native.notice_fd)
                for handle in self._native.notices():
                    listener = self._watching.pop(handle, None)
                    if listener is not None:
                        listener.on_drained()
        finally:
            trio.lowlevel.remove_instrument(instrument)
            self._native.close()
