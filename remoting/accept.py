"""Accepting connections when the process runs out of descriptors (or memory).

``accept()`` failing with EMFILE (``ulimit -n`` reached), ENFILE, ENOMEM or ENOBUFS leaves the
client waiting in the listen backlog and the listening socket readable, so retrying at once
spins. Trio's ``serve_listeners`` sleeps 0.1 s between attempts but logs a traceback at ERROR
for each: 10 a second for as long as the limit holds. Here the first failure of a spell is one
WARNING line (naming the limit), the retries back off from 0.1 to 1 s, and the end of the spell
is one INFO line; connections already open are served throughout.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
from collections.abc import Awaitable, Callable

import trio

log = logging.getLogger(__name__)

CAPACITY_ERRNOS = frozenset((errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS))
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 1.0


def backoff_s(failures: int) -> float:
    """The wait before retry number ``failures`` (1, 2, ...) of one spell."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** min(failures - 1, 16))


async def accept_loop(
    name: str,
    listener: trio.SocketListener,
    handle: Callable[[trio.SocketStream], Awaitable[None]],
    handlers: trio.Nursery,
    connections: Callable[[], int],
) -> None:
    """Accept forever, each stream handled in ``handlers``; ``connections()`` is how many are
    open (for the log line)."""
    failures = 0
    while True:
        try:
            stream = await listener.accept()
        except trio.ClosedResourceError:
            # stop_accepting closed it while this task was between two accepts (a connection
            # had just come in): the cancel it also sent is not seen before accept() fails
            return
        except OSError as exc:
            if exc.errno not in CAPACITY_ERRNOS:
                raise
            failures += 1
            if failures == 1:
                soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
                log.warning(
                    "%s cannot accept connections: %s (%s); open files limit (ulimit -n) %d, "
                    "%d connections open; retrying every %g-%g s",
                    name,
                    errno.errorcode.get(exc.errno, exc.errno),
                    os.strerror(exc.errno),
                    soft,
                    connections(),
                    BACKOFF_FIRST_S,
                    BACKOFF_MAX_S,
                )
            await trio.sleep(backoff_s(failures))
            continue
        if failures:
            log.info("%s accepts connections again, after %d failed attempts", name, failures)
            failures = 0
        handlers.start_soon(handle, stream)
