"""A tracing timestamp in epoch ms (``calls._ts_ms``) is the value ``datetime.fromisoformat``
gives, to the last bit, whether it is read the quick way (the daemon's own form) or not."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuzk_diag.ingest.assemble.calls import _ts_ms


def _reference(ts: str) -> float | None:
    try:
        return datetime.fromisoformat(ts).timestamp() * 1000.0
    except ValueError:
        return None


def _two(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(lo, hi).map(lambda v: f"{v:02d}")


# Every field one past its range too (month 13, second 60 ...): those are no dates either way.
_FORM = st.builds(
    lambda y, mo, d, h, mi, s, us: f"{y:04d}-{mo}-{d}T{h}:{mi}:{s}.{us:06d}Z",
    st.integers(1, 9999),
    _two(0, 13),
    _two(0, 32),
    _two(0, 24),
    _two(0, 60),
    _two(0, 61),
    st.integers(0, 999_999),
)


@given(_FORM)
def test_the_daemons_form_reads_as_fromisoformat_reads_it(ts: str) -> None:
    assert _ts_ms(ts) == _reference(ts)


@pytest.mark.parametrize(
    "ts",
    [
        "2026-03-13T15:13:19.949686Z",
        "2024-02-29T23:59:59.999999Z",  # a leap day
        "2026-02-29T00:00:00.000000Z",  # none
        "1969-12-31T23:59:59.999999Z",  # before the epoch
        "2026-03-13T15:13:60.000000Z",  # a 60th second
        "2026-03-13T15:13:1\u0669.949686Z",  # a digit that is not ASCII
        "2026-03-13T15:13:+9.949686Z",
        "2026-03-13T15:13:19.9496 6Z",
        "2026-03-13T15:13:19.94968Z",  # five digits of fraction: the slow way
        "2026-03-13T15:13:19.949686+00:00",
        "2026-03-13T15:13:19.949686+05:30",
        "2026-03-13T15:13:19Z",
        "2026-03-13 15:13:19.949686Z",
        "not a date at all, 27 chars",
    ],
)
def test_edge_forms_read_as_fromisoformat_reads_them(ts: str) -> None:
    assert _ts_ms(ts) == _reference(ts)
