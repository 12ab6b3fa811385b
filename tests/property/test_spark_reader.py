"""The Spark reader's one-property lookup agrees with Java's full parse of the properties
string (string2messageProperties: empty names and values dropped, later duplicates win)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ops.spark.reader import _property
from remoting import message as codec

NAMES = st.sampled_from(["KEYS", "UNIQ_KEY", "TAGS", "XKEYS", "KEYSX", ""])
VALUES = st.text(alphabet=st.characters(blacklist_characters="\x01\x02"), max_size=6)


@given(st.lists(st.tuples(NAMES, VALUES), max_size=8), st.booleans())
def test_property_matches_the_full_parse(pairs, trailing) -> None:
    text = "\x02".join(f"{name}\x01{value}" for name, value in pairs) + ("\x02" if trailing else "")
    parsed = codec.string_to_properties(text)
    for name in ("KEYS", "UNIQ_KEY"):
        assert _property(text, name) == parsed.get(name, "")


def test_a_later_duplicate_wins_unless_it_is_empty() -> None:
    assert _property("KEYS\x01a\x02KEYS\x01b", "KEYS") == "b"
    assert _property("KEYS\x01a\x02KEYS\x01", "KEYS") == "a"
    assert _property("XKEYS\x01a\x02KEYS\x01b\x02AKEYS\x01c", "KEYS") == "b"
