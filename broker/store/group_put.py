"""Pipelined sends stored as a group (issue 27): the messages of every SEND request one read
from a connection brought in, appended in request order in one pass, then dispatched in one
pass (``CommitLogDispatcher.dispatch_many``, as reput does) instead of a store call, a dispatch
and the bookkeeping per message.

Each message keeps its own result: one the log refuses (too large, a bad property) is refused
alone and the rest are stored. A refusal of the whole store (a slave, shutting down, the disk
full or failing) answers every message still to put with it, as a put per message would once
the condition holds. Dispatch behaves as a single put's: done here only when reput was caught
up before the group, and when the disk refuses it, left to reput from the group's first record
(dispatch_many moves nothing on when it raises; reput re-dispatches idempotently).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING

import attrs

from broker.store.types import DispatchRequest, MessageExtBrokerInner, PutMessageResult

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore


def put_message_group(
    store: DefaultMessageStore, msgs: list[MessageExtBrokerInner]
) -> list[PutMessageResult]:
    """One result per message, in order."""
    refused = store._refuse()
    if refused is not None:
        return [attrs.evolve(refused) for _ in msgs]
    started = perf_counter_ns()
    caught_up = store.reput.caught_up()
    put = store.commit_log.put_message
    results: list[PutMessageResult] = []
    requests: list[DispatchRequest] = []
    stored = size = end = 0
    for msg in msgs:
        if refused is None:
            result, request = put(msg)
            if request is not None and result.ok:
                append = result.append
                assert append is not None
                requests.append(request)
                stored += 1
                size += append.wrote_bytes
                end = append.end_offset
            else:
                # What refused this one may refuse the rest (a disk error marks the store
                # unhealthy): a put per message would have asked again.
                refused = store._refuse()
        else:
            result = attrs.evolve(refused)
        results.append(result)
    if stored:
        store.stats.on_put(stored, size)
        if store.put_listener is not None:
            store.put_listener()
        if not caught_up:
            store.reput.wake()
        elif store._dispatch_ok(store.dispatcher.dispatch_many, requests):
            store.reput.dispatched_to(end)
    # Java times each putMessage; a message of the group took its share of the pass.
    share = (perf_counter_ns() - started) // len(msgs)
    on_put_time = store.stats.on_put_time
    for _ in msgs:
        on_put_time(share)
    return results
