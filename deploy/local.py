"""``python -m deploy.local``: a NameServer on 127.0.0.1:9876 and one broker from
``conf/broker.conf`` in the foreground (what ``make run`` starts)."""

from __future__ import annotations

import sys
from pathlib import Path

from deploy.launcher import Member, run

CONF = Path(__file__).resolve().parent.parent / "conf"


def main() -> int:
    python = sys.executable
    return run(
        [
            Member(
                "namesrv",
                [python, "-m", "namesrv", "-c", str(CONF / "namesrv.conf"), "--host", "127.0.0.1"],
            ),
            Member("broker-a", [python, "-m", "broker", "-c", str(CONF / "broker.conf")]),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
