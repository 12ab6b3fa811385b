"""A message body shown three ways: text, hex and JSON. Pure. Bodies are whatever a producer
sent (up to 4 MiB of anything): the page shows at most SHOWN_BYTES of them and says so, and
the whole body stays one click away as a download."""

from __future__ import annotations

import json

import attrs

SHOWN_BYTES = 64 * 1024
HEX_ROW = 16


@attrs.frozen
class BodyViews:
    size: int
    shown: int  # bytes rendered: the first ``shown`` of ``size``
    text: str
    hex: str
    json: str | None  # indented, or None when the body is no JSON
    json_problem: str | None


def hex_dump(data: bytes) -> str:
    """Offset, 16 bytes in hex, the same bytes as ASCII (dots for the rest)."""
    rows = []
    for start in range(0, len(data), HEX_ROW):
        chunk = data[start : start + HEX_ROW]
        hexed = " ".join(f"{b:02x}" for b in chunk)
        ascii_ = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        rows.append(f"{start:08x}  {hexed:<{HEX_ROW * 3 - 1}}  {ascii_}")
    return "\n".join(rows)


def body_views(body: bytes, charset: str = "utf-8") -> BodyViews:
    head = body[:SHOWN_BYTES]
    pretty, problem = None, None
    if len(body) > SHOWN_BYTES:
        problem = f"not parsed: the body is {len(body)} bytes, more than the {SHOWN_BYTES} shown"
    else:
        try:
            pretty = json.dumps(json.loads(body), indent=2, ensure_ascii=False, sort_keys=False)
        except (ValueError, RecursionError) as exc:
            problem = f"not JSON: {str(exc).splitlines()[0]}"
    return BodyViews(
        size=len(body),
        shown=len(head),
        text=head.decode(charset, "replace"),
        hex=hex_dump(head),
        json=pretty,
        json_problem=problem,
    )
