"""Remote address patterns, as RocketMQ 4.9's RemoteAddressStrategyFactory reads them."""

from __future__ import annotations

import pytest

from acl.address import EVERYTHING, NOTHING, parse_host, parse_pattern


def matches(pattern: str | None, host: str) -> bool:
    return parse_pattern(pattern).matches(parse_host(host))


@pytest.mark.parametrize(
    ("pattern", "inside", "outside"),
    [
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["10.0.0.1"], []),
        ("192.168.1.1", ["192.168.1.1"], ["192.168.1.2", "::1"]),
        ("::1", ["::1", "0:0:0:0:0:0:0:1"], ["127.0.0.1"]),
        ("192.168.*.*", ["192.168.0.1", "192.168.255.7"], ["192.169.0.1", "10.168.1.1"]),
        ("192.168.*", ["192.168.3.4"], ["192.167.3.4"]),
        ("10.*", ["10.200.1.1"], ["11.0.0.1"]),
        ("192.168.1.1-100", ["192.168.1.1", "192.168.1.100"], ["192.168.1.0", "192.168.1.101"]),
        ("192.168.1-5.*", ["192.168.3.77"], ["192.168.6.1"]),
        ("192.168.1.{1,2}", ["192.168.1.1", "192.168.1.2"], ["192.168.1.3"]),
        ("192.168.1.1,10.0.0.1", ["10.0.0.1", "192.168.1.1"], ["192.168.1.2"]),
        ("2::ac5:78:{1,2}", ["2::ac5:78:1", "2:0:0:0:0:ac5:78:2"], ["2::ac5:78:3"]),
        # Java: the range sits in the 7th group, '::' padding the fixed part to six groups
        ("2::ac5:78:1-200:*", ["2::ac5:78:1:ffff", "2:0:0:0:ac5:78:200:1"], ["2::ac5:78:201:0"]),
        ("2::ac5:78:1-200", ["2:0:0:0:0:ac5:78:1ff"], ["2:0:0:0:0:ac5:78:201"]),
        ("2:3:*", ["2:3:4::1"], ["2:4::1"]),
        ("fe80:0:0:0:0:0:0:*", ["fe80::abcd"], ["fe81::1"]),
    ],
)
def test_javas_pattern_forms(pattern: str, inside: list[str], outside: list[str]) -> None:
    for host in inside:
        assert matches(pattern, host), (pattern, host)
    for host in outside:
        assert not matches(pattern, host), (pattern, host)


def test_blank_matches_nothing_and_star_matches_even_a_host_that_is_no_address() -> None:
    assert parse_pattern(None) is NOTHING and parse_pattern("  ") is NOTHING
    assert parse_pattern("*:*:*:*:*:*:*:*") is EVERYTHING
    assert EVERYTHING.matches(parse_host("not-an-address"))
    assert not parse_pattern("10.*").matches(None)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("192.168.1.300", "not an IPv4 or IPv6 address"),
        ("*.168.1.1", "first octet"),
        ("192.168.1-5.7", "only * may follow"),
        ("192.168.5-1.*", "0 <= m <= n <= 255"),
        ("192.168.1.1-256", "0 <= m <= n <= 255"),
        ("192.168.1.-5", "not * or a range"),
        ("192.168.1.{}", "nothing between the braces"),
        ("192.168.1{1,2}", "prefix"),
        ("10.0.0.1,nope", "'nope' is not"),
        ("2::*:1", "may only come last"),
        ("2:3:1-2:4", "range must be the last group"),
        ("2:3:fffff:*", "not an IPv6 group"),
        ("2::1-10000", "0 <= m <= n <= ffff"),
    ],
)
def test_a_bad_pattern_is_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(ValueError, match=None) as refused:
        parse_pattern(pattern)
    assert reason in str(refused.value)
