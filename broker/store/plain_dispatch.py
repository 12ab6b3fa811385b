"""What a run of plain single puts hands dispatch, packed (issue 27): the reference of
broker/store/native/plain_dispatch.c, which put_rows (plain_rows.c) fills as it appends.

``dispatch_many`` takes a DispatchRequest per record and walks them in Python three times (the
queue runs, the wake-ups, the index runs). For the records a ``put_rows`` call appended the
same work comes packed instead (``CommitLogDispatcher.dispatch_rows``):

- one ``PlainRun`` per run of consecutive queue offsets of one queue, in ``_queue_runs``' order
  (queues as they first appear, each queue's runs in log order): its ConsumeQueue units back to
  back, the first one's queue offset, and the arrival listener's arguments once per tags code
  (the newest record carrying it, in the order the codes first appear: ``_notify_newest``);
- the index entries (layout.BATCH_KEY: the Java hash of ``topic#key`` and the phy offset; the
  UNIQ_KEY, then each space-separated KEYS entry, record by record in log order: what
  ``build_index_runs`` adds), in chunks of one store timestamp, the IndexFile entry's time;
- the last record's store timestamp.

Records of a prepared or rolled-back half take no unit and no wake-up, and a rolled-back one no
index entry, as in ``dispatch_many``.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.store.dispatch import queue_runs
from broker.store.index_file import python_index_hashes
from broker.store.layout import BATCH_KEY, CQ_UNIT
from broker.store.types import DispatchRequest
from remoting.message import TRANSACTION_ROLLBACK_TYPE

# The arrival listener's arguments: (topic, queue id, next queue offset, tags code, store
# timestamp, properties: the row's, a plain send's record bytes or a dict).
Wake = tuple[str, int, int, int, int, dict[str, str] | bytes]
# (topic, queue id, the first unit's queue offset, the units, the wake-ups)
PlainRun = tuple[str, int, int, bytes, list[Wake]]
# (store timestamp, index entries: layout.BATCH_KEY each)
KeyChunk = tuple[int, bytes]
# (runs, index entry chunks, the last record's store timestamp)
AppendedRows = tuple[list[PlainRun], list[KeyChunk], int]


def python_plain_dispatch(requests: Sequence[DispatchRequest]) -> AppendedRows:
    """``requests`` (in log order) packed for ``dispatch_rows``."""
    runs: list[PlainRun] = []
    for (topic, queue_id), runs_of_queue in queue_runs(requests).items():
        for run in runs_of_queue:
            units = b"".join(
                CQ_UNIT.pack(r.commit_log_offset, r.msg_size, r.tags_code) for r in run
            )
            newest: dict[int, DispatchRequest] = {}
            for r in run:
                newest[r.tags_code] = r
            wakes = [
                (r.topic, r.queue_id, r.consume_queue_offset + 1, r.tags_code, r.store_timestamp,
                 r.properties)
                for r in newest.values()
            ]  # fmt: skip
            runs.append((topic, queue_id, run[0].consume_queue_offset, units, wakes))
    chunks: list[tuple[int, bytearray]] = []
    for r in requests:
        if r.sys_flag & TRANSACTION_ROLLBACK_TYPE == TRANSACTION_ROLLBACK_TYPE:
            continue
        entries = python_index_hashes((r,), r.topic + "#", -1)
        if not entries:
            continue
        if not chunks or chunks[-1][0] != r.store_timestamp:
            chunks.append((r.store_timestamp, bytearray()))
        for key_hash, phy_offset, _ in entries:
            chunks[-1][1].extend(BATCH_KEY.pack(key_hash, phy_offset))
    last_timestamp = requests[-1].store_timestamp if requests else 0
    return runs, [(ts, bytes(keys)) for ts, keys in chunks], last_timestamp
