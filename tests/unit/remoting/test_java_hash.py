"""Java's String.hashCode as RocketMQ stores it (tags codes, index keys)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remoting.java_hash import java_hash, java_string_hash, python_java_hash, tags_code

# String.hashCode() values printed by OpenJDK 17 for these strings.
JAVA_HASHES = {
    "": 0,
    "TagA": 2598919,
    "TagB": 2598920,
    "hello": 99162322,
    "TopicTest": -1902610879,
    "中文": 646394,
    "😀": 1772899,  # a surrogate pair: two UTF-16 code units
    "polygenelubricants": -2147483648,
}


def reference(text: str) -> int:
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES.items())
def test_known_java_values(text: str, expected: int) -> None:
    # java_hash is the native twin's when built; the pure one is its reference
    assert java_string_hash(text) == java_hash(text) == python_java_hash(text) == expected


def test_tags_code_of_no_tag_is_zero() -> None:
    assert tags_code(None) == 0 and tags_code("") == 0
    assert tags_code("TagA") == 2598919


def test_long_and_non_ascii_strings_hash_like_java() -> None:
    for text in ("x" * 5000, "TopicTest#" + "0A" * 16, "é" * 10 + "abc", "a😀b"):
        assert java_string_hash(text) == python_java_hash(text) == reference(text)


@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=4100))
def test_ascii_strings_of_any_length_hash_like_java(text: str) -> None:
    assert java_hash(text) == python_java_hash(text) == reference(text)


@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_any_string_hashes_like_java(text: str) -> None:
    assert java_hash(text) == python_java_hash(text) == reference(text)
