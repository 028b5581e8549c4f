"""Which GPU-region line a block can take next (``Block.accepts``), and the line span of a
record (``calls._span``): the stage rules of the reference (section 1.4) line by line."""

from __future__ import annotations

import pytest

from cuzk_diag.ingest.assemble.blocks import Block, _apply_gpu
from cuzk_diag.ingest.assemble.calls import _span
from cuzk_diag.records import Event, Family

# The GPU-region lines of one call of main code (V11), in their printed order.
MAIN = ["mutex_wait", "ntt_h", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "mutex_held"]
# Phase 9-11 code: pre-staging, no T17/T18/T19.
PRESTAGE = ["prestage_vram", "prestage_setup", "ntt_msm_h", "batch_add", "tail_msm"]


def _block(*kinds: str, tid: int = 0) -> Block:
    blk = Block(1)
    for n, kind in enumerate(kinds, start=2):
        fields = {"gpu_tid": tid} if tid else {}
        _apply_gpu(blk, Event(n, 0, Family.TIMING, kind, fields), kind, tid)
    return blk


@pytest.mark.parametrize("order", [MAIN, PRESTAGE])
def test_each_line_of_a_call_is_taken_in_its_order(order: list[str]) -> None:
    ntt_era = "ntt_h" in order
    for i, kind in enumerate(order):
        assert _block(*order[:i]).accepts(kind, 0, ntt_era), (order[:i], kind)


@pytest.mark.parametrize(
    ("seen", "kind", "era", "taken"),
    [
        # A stage once seen, or a stage before the last one seen, is not taken again.
        (["mutex_wait", "ntt_h", "ntt_msm_h"], "ntt_msm_h", True, False),
        (["mutex_wait", "ntt_h", "ntt_msm_h", "barrier_wait"], "mutex_wait", True, False),
        # T4 in NTT_H code needs the NTT_H line before it; in older code it does not.
        (["mutex_wait"], "ntt_msm_h", True, False),
        (["mutex_wait"], "ntt_msm_h", False, True),
        # T18, T5, T6 and T19 each need the line before them.
        (["mutex_wait", "ntt_h"], "barrier_wait", True, False),
        (["mutex_wait", "ntt_h"], "batch_add", True, False),
        (["mutex_wait", "ntt_h", "ntt_msm_h"], "tail_msm", True, False),
        (
            ["mutex_wait", "ntt_h", "ntt_msm_h", "barrier_wait", "batch_add"],
            "mutex_held",
            True,
            False,
        ),
        # With T17 the barrier (T18) comes before T5; without T17 (older code) there is none.
        (["mutex_wait", "ntt_h", "ntt_msm_h"], "batch_add", True, False),
        (["ntt_h", "ntt_msm_h"], "batch_add", True, True),
        # T19 only ends a block that began with T17.
        (["ntt_h", "ntt_msm_h", "batch_add", "tail_msm"], "mutex_held", True, False),
        # T11-T13 follow T10.
        (["mutex_wait"], "prestage_setup", False, False),
        (["mutex_wait", "prestage_vram"], "prestage_setup", False, True),
        # The one-time lines of a GPU's first call come in their stage order.
        (["mutex_wait"], "pool_threshold", True, True),
        (["mutex_wait", "pool_threshold"], "d_a_cache", True, True),
        (["mutex_wait", "ntt_h"], "d_a_cache", True, False),
        # One NTT_H per circuit, and none after T4.
        (["mutex_wait", "ntt_h"], "ntt_h", True, False),
        (["mutex_wait", "ntt_h", "ntt_msm_h"], "ntt_h", True, False),
    ],
)
def test_a_line_is_taken_only_after_the_line_it_follows(
    seen: list[str], kind: str, era: bool, taken: bool
) -> None:
    assert _block(*seen).accepts(kind, 0, era) is taken


def test_a_closed_block_takes_nothing() -> None:
    blk = _block("mutex_wait")
    blk.closed = True
    assert not blk.accepts("ntt_h", 0, True)


def test_further_gpu_threads_keep_their_own_order() -> None:
    blk = _block("mutex_wait", "ntt_h", "ntt_msm_h")
    assert blk.accepts("ntt_msm_h", 1, True)  # thread 1's first line
    assert not blk.accepts("batch_add", 1, True)  # before thread 1's T4
    _apply_gpu(blk, Event(9, 0, Family.TIMING, "ntt_msm_h", {"gpu_tid": 1}), "ntt_msm_h", 1)
    assert blk.accepts("batch_add", 1, True)
    assert not blk.accepts("ntt_msm_h", 1, True)  # thread 1's T4 again
    assert not blk.accepts("mutex_wait", 1, True)  # threads print only T16 and T4-T6


def test_after_a_gap_a_line_may_skip_stages_but_not_go_back() -> None:
    blk = _block("mutex_wait", "ntt_h", "ntt_msm_h", "barrier_wait")
    assert not blk.accepts("tail_msm", 0, True)  # its T5 is missing
    assert blk.accepts("tail_msm", 0, True, lenient=True)
    assert not blk.accepts("ntt_msm_h", 0, True, lenient=True)


@pytest.mark.parametrize(
    ("lines", "span"),
    [([], (None, None)), ([7], (7, 7)), ([5, 3, 9, 4], (3, 9)), ([2, 2], (2, 2))],
)
def test_a_record_spans_its_first_to_its_last_line(
    lines: list[int], span: tuple[int | None, int | None]
) -> None:
    assert _span(lines) == span
