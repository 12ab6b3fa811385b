"""MQVersion ordinals as names (``409`` -> ``V4_9_8``): what Java's MQVersion.getVersionDesc
prints for the version every RemotingCommand carries (docs/spec/remoting.md §3.2).

Java numbers its releases by their position in one enum. From V4_0_0_SNAPSHOT (212) on, every
x.y.z release of 4.x and 5.x has a SNAPSHOT then a release entry, z and y running 0..9; the 3.x
entries before that are irregular and named here by ordinal only. Past V5_9_9 Java says
HIGHER_VERSION.
"""

from __future__ import annotations

from remoting.codes import CURRENT_VERSION

_V4_0_0_SNAPSHOT = 212
_LAST_RELEASE = 611  # V5_9_9
HIGHER_VERSION = "HIGHER_VERSION"


def version_desc(ordinal: int) -> str:
    if ordinal > _LAST_RELEASE:
        return HIGHER_VERSION
    if ordinal < _V4_0_0_SNAPSHOT:
        return f"V3 (MQVersion {ordinal})" if ordinal >= 0 else f"unknown ({ordinal})"
    release, snapshot = divmod(ordinal - _V4_0_0_SNAPSHOT, 2)
    major, rest = divmod(release, 100)
    name = f"V{4 + major}_{rest // 10}_{rest % 10}"
    return name if snapshot else f"{name}_SNAPSHOT"


CURRENT_VERSION_DESC = version_desc(CURRENT_VERSION)
assert CURRENT_VERSION_DESC == "V4_9_8", CURRENT_VERSION_DESC
