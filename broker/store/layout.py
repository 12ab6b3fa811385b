"""The store's own fixed layouts and limits, in one place (docs/spec/store-format.md §2, §3,
§5): ConsumeQueue units, IndexFile header, slots and entries, the CommitLog's limits on a
record. Imports nothing of ours: consume_queue.py, index_file.py, append_cursor.py and
store_native.py (which checks the C build, broker/store/native/store.h, against these values
when it loads it) all take them from here.
"""

from __future__ import annotations

import struct

CQ_UNIT = struct.Struct(">qiq")  # commit log offset, size, tags code
assert CQ_UNIT.size == 20
CQ_FILLER_SIZE = 0x7FFFFFFF  # the size of a filler unit (a queue that starts past offset 0)

INDEX_HEADER = struct.Struct(">qqqqii")  # begin ts, end ts, begin phy, end phy, slots, count
assert INDEX_HEADER.size == 40
INDEX_SLOT = struct.Struct(">i")  # the newest entry number of a hash slot
INDEX_ENTRY = struct.Struct(">iqii")  # key hash, phy offset, time diff (s), previous entry
assert INDEX_ENTRY.size == 20
# An index entry of a batch put's packed dispatch (AppendCursor.put_batch_dispatch): the key's
# Java hash and the record's phy offset, one per key, in the order IndexService adds them.
BATCH_KEY = struct.Struct(">iq")
assert BATCH_KEY.size == 12
# A record with more keys than this is indexed the general way (IndexService.build_index).
INDEX_REQUEST_MAX_KEYS = 64

# The CommitLog's limits on one record (MessageStoreConfig / CommitLog in Java): a topic of at
# most 127 bytes (TOPICLENGTH is one byte, Java refuses past Byte.MAX_VALUE) and properties of
# at most 32767 (PROPERTIESLENGTH is a short).
MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767

# Upper bounds (ms) of Java's putMessageDistributeTime buckets; one more bucket is open-ended
# (StoreStats' put_distribution; the C's put_bucket_bounds_ms, plain_pass.c).
PUT_BUCKET_BOUNDS_MS = (0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10_000)
