"""CommitLog recovery scans, pure: memoryviews in, a RecoveryReport out (docs/spec/store-format.md §7).

* Normal (the last run stopped cleanly): scan from the third-last segment.
* Abnormal (the abort file is there): scan from the newest segment whose first record is older
  than the checkpoint's safe time, re-dispatching every valid record.

Either way the scan stops at the first record that is not a MESSAGE (bad magic, zeros, a size
that does not add up, a CRC mismatch) or at a BLANK in the last segment, and everything after
that point is cut by the caller, after logging the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from remoting.record import RecordKind, RecordScan, scan_record

Segment = tuple[int, memoryview]  # (start offset, mapped bytes)
PROGRESS_EVERY_BYTES = 256 * 1024 * 1024


@attrs.frozen(kw_only=True)
class RecoveryReport:
    mode: str  # "normal", "abnormal" or "empty"
    start_offset: int  # where the scan began
    valid_end: int  # exclusive end of the last valid record: the new CommitLog max offset
    records: int
    stop_reason: str
    segments_after_cut: int  # whole segments beyond the valid end, to be deleted
    scanned_bytes: int

    def describe(self) -> str:
        return (
            f"mode={self.mode} from={self.start_offset} valid_end={self.valid_end} "
            f"records={self.records} stopped={self.stop_reason!r} "
            f"segments_cut={self.segments_after_cut} scanned_bytes={self.scanned_bytes}"
        )


def first_record_timestamp(view: memoryview) -> int | None:
    """STORETIMESTAMP of a segment's first record, if it starts with a message."""
    scan = scan_record(view, 0)
    return scan.store_timestamp if scan.kind is RecordKind.MESSAGE else None


def abnormal_start_index(segments: Sequence[Segment], safe_timestamp: int) -> int:
    """The newest segment whose first message is non-zero-timed and not after the safe point;
    the first segment if none is (Java's isMappedFileMatchedRecover)."""
    for index in range(len(segments) - 1, -1, -1):
        stamp = first_record_timestamp(segments[index][1])
        if stamp is not None and stamp != 0 and stamp <= safe_timestamp:
            return index
    return 0


def scan_commit_log(
    segments: Sequence[Segment],
    start_index: int,
    *,
    mode: str,
    check_crc: bool,
    visit: Callable[[RecordScan], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RecoveryReport:
    """Walk records from ``segments[start_index]``; ``visit`` sees every valid record (abnormal
    recovery re-dispatches them); ``progress(scanned, total)`` is called every 256 MiB."""
    if not segments:
        return RecoveryReport(
            mode="empty",
            start_offset=0,
            valid_end=0,
            records=0,
            stop_reason="no segments",
            segments_after_cut=0,
            scanned_bytes=0,
        )
    total_bytes = sum(len(view) for _, view in segments[start_index:])
    index, position, records, scanned, next_progress = start_index, 0, 0, 0, PROGRESS_EVERY_BYTES
    start_offset, view = segments[index]
    reason = "end of data"
    while True:
        scan = scan_record(view, position, check_crc=check_crc)
        if scan.kind is RecordKind.MESSAGE:
            if visit is not None:
                visit(scan)
            position += scan.size
            records += 1
            if progress is not None and scanned + position >= next_progress:
                progress(scanned + position, total_bytes)
                next_progress += PROGRESS_EVERY_BYTES
            continue
        if scan.kind is RecordKind.BLANK and index + 1 < len(segments):
            scanned += len(view)
            index += 1
            start_offset, view = segments[index]
            position = 0
            continue
        if scan.kind is RecordKind.BLANK:
            reason = "blank at the end of the last segment"
        elif scan.kind is RecordKind.END:
            reason = "end of data (zeros)" if position < len(view) else "end of segment"
        else:
            reason = f"invalid record at {start_offset + position}: {scan.reason}"
        break
    return RecoveryReport(
        mode=mode,
        start_offset=segments[start_index][0],
        valid_end=start_offset + position,
        records=records,
        stop_reason=reason,
        segments_after_cut=len(segments) - index - 1,
        scanned_bytes=scanned + position,
    )
