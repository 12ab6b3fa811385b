"""next_warm_range, the warmer's plan: sizes in, the next range to populate out. The warm edge
stays a bounded distance ahead of the writer, in whole pages, never past the segment, and a
writer that overtook the edge is never warmed behind."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.store.mapped_file import OS_PAGE_SIZE as PAGE
from broker.store.warm import next_warm_range

MiB = 1 << 20


def test_a_fresh_segment_is_warmed_from_the_writer_in_chunks_up_to_twice_ahead() -> None:
    assert next_warm_range(100, 0, 1024 * MiB, 32 * MiB, 4 * MiB) == (0, 4 * MiB)
    assert next_warm_range(100, 60 * MiB, 1024 * MiB, 32 * MiB, 4 * MiB) == (60 * MiB, 4 * MiB)
    assert next_warm_range(100, 62 * MiB, 1024 * MiB, 32 * MiB, 4 * MiB) == (
        62 * MiB,
        2 * MiB + PAGE,
    )
    assert next_warm_range(100, 64 * MiB + PAGE, 1024 * MiB, 32 * MiB, 4 * MiB) is None


def test_the_segment_end_stops_the_edge() -> None:
    assert next_warm_range(1000 * MiB, 1022 * MiB, 1024 * MiB, 32 * MiB, 4 * MiB) == (
        1022 * MiB,
        2 * MiB,
    )
    assert next_warm_range(1000 * MiB, 1024 * MiB, 1024 * MiB, 32 * MiB, 4 * MiB) is None


def test_a_writer_past_the_edge_is_warmed_from_its_own_page() -> None:
    assert next_warm_range(10 * MiB + 7, 2 * MiB, 1024 * MiB, MiB, 4 * MiB) == (
        10 * MiB,
        2 * MiB + PAGE,
    )


@st.composite
def sizes(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    file_size = draw(st.integers(1, 4096)) * PAGE
    wrote = draw(st.integers(0, file_size))
    warmed = draw(st.integers(0, file_size // PAGE)) * PAGE
    ahead = draw(st.integers(1, 512)) * PAGE
    chunk = draw(st.integers(1, 64)) * PAGE
    return wrote, warmed, file_size, ahead, chunk


@given(sizes())
def test_following_the_plan_warms_whole_pages_from_the_writer_to_the_bound(drawn) -> None:
    wrote, warmed, file_size, ahead, chunk = drawn
    goal = min(file_size, -(-(wrote + 2 * ahead) // PAGE) * PAGE)
    while (planned := next_warm_range(wrote, warmed, file_size, ahead, chunk)) is not None:
        start, length = planned
        assert start % PAGE == 0 and length % PAGE == 0 and 0 < length <= chunk
        assert start >= wrote - wrote % PAGE  # never behind the writer's page
        assert start == max(warmed, wrote - wrote % PAGE)  # no gap behind the edge
        assert start + length <= goal <= file_size  # bounded ahead, inside the segment
        warmed = start + length
    assert max(warmed, wrote - wrote % PAGE) >= goal  # done once warm from the writer to the bound
