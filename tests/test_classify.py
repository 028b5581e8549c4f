"""The chunk classification: the tracing headers and the tracing lines analysis needs, found by
one loop over each line's bytes (``scan.tracing_fill``, compiled) or by the RE2 kernels of their
regexes, give the same lines."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.ingest.parse import scan
from cuzk_diag.ingest.parse.tracing import TRACING_KINDS

# (``cuzk_diag.ingest.parse.classify`` is also the name of the package's function)
classify = importlib.import_module("cuzk_diag.ingest.parse.classify")

ROOT = Path(__file__).resolve().parent.parent


def _both(monkeypatch: pytest.MonkeyPatch, arr: pa.StringArray, search: bool = True):
    """``classify._tracing`` of every line of ``arr``, by the loop and by the regexes."""
    got = []
    for byte_scan in (True, False):
        monkeypatch.setattr(classify, "BYTE_SCAN", byte_scan)
        heads, relevant = classify._tracing(arr, np.ones(len(arr), dtype=bool), search=search)
        got.append((heads.tolist(), relevant.tolist()))
    return got


def _regex(arr: pa.StringArray, pattern: str) -> list[bool]:
    import pyarrow.compute as pc

    return pc.match_substring_regex(arr, pattern).to_pylist()


HEADS = [
    "2026-03-13T20:41:09.364197Z  INFO ",
    "2026-03-13T20:41:09Z WARN ",
    "2026-03-13T20:41:09.1+02:00 ERROR ",
    "2026-03-13T20:41:09-0530 DEBUG ",
    "2026-03-13T20:41:09.5+02:0 TRACE ",  # (an offset of three digits: no header)
    "2026-03-13T20:41:09. INFO ",  # (a dot without digits)
    "2026-03-13 20:41:09Z INFO ",  # (no T)
    "2026-03-13T20:41:09Z INFO",  # (no space after the level)
    "2026-03-13T20:41:09ZINFO ",  # (no space before it)
    "2026-03-13T20:41:09Z  NOTE ",
    "2026-3-13T20:41:09Z INFO ",
    "２０２６-03-13T20:41:09Z INFO ",  # (digits that are not ASCII)
    "2026-03-13T20:41:09+01:00\tINFO ",
    "",
]
_WORDS = [p for p, _ in TRACING_KINDS]
PIECES = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(_WORDS).map(lambda w: w[: len(w) // 2]),  # (a word's start only)
    st.sampled_from(_WORDS).map(lambda w: w[1:]),
    st.sampled_from(["e:", " e", "GPU ", "Phase 7: ", "partition=3", "job_id=ab-12", "é", "\x00"]),
    st.text(min_size=0, max_size=12),
)


@st.composite
def lines(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(HEADS))
    if draw(st.booleans()):  # (a header with one byte changed)
        at = draw(st.integers(0, max(0, len(head) - 1)))
        head = head[:at] + draw(st.sampled_from("09-T:.Z+ X")) + head[at + 1 :]
    return head + "".join(draw(st.lists(PIECES, max_size=6)))


@settings(max_examples=400, deadline=None)
@given(st.lists(lines(), min_size=1, max_size=30))
def test_the_loop_finds_the_lines_the_regexes_find(batch):
    arr = pa.array(batch, pa.string())
    heads = _regex(arr, classify._TRACING_HEAD_RE2)
    relevant = [h and r for h, r in zip(heads, _regex(arr, classify._RELEVANT_RE2), strict=True)]
    with pytest.MonkeyPatch.context() as mp:
        for got in _both(mp, arr):
            assert got == (heads, relevant)
        for got in _both(mp, arr, search=False):
            assert got == (heads, [False] * len(batch))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="GPU provetim:ahsFIN_TMKe ", max_size=80), st.sampled_from(_WORDS))
def test_words_are_found_anywhere_in_a_line(text, word):
    words = scan.Words(_WORDS)
    head = "2026-03-13T20:41:09Z  INFO "
    for line in (head + text, head + text + word, head + word + text, head + text[:9] + word):
        data = np.frombuffer(line.encode(), dtype=np.uint8)
        offs = np.array([0, len(data)], dtype=np.int32)
        found = np.zeros((2, 1), dtype=np.uint8)
        rows = np.zeros(1, dtype=np.int64)
        args = (words.shortest, words.shift, words.text, words.at, words.tails)
        scan.tracing_fill(data.data, offs, rows, *args, found[0], found[1])
        assert found[0, 0] == 1
        assert bool(found[1, 0]) == any(w in line for w in _WORDS), line


_PREFIX_PIECES = ["CUZK_", "CUZK_TIMING: ", "CUZK_NTT_H: ", "TIMELINE,", "TIMELINE", "CUZK"]
_PREFIX_PIECES += ["C", "T", "é", "x", " ", "2026-03-13T15:14:01Z  INFO "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PREFIX_PIECES), max_size=3), max_size=30))
def test_the_prefix_loop_agrees_with_the_kernels(lines):
    """``classify._prefixes`` by the loop over the lines' first bytes and by Arrow's
    ``starts_with`` (empty lines and lines that hold a prefix but part of it included)."""
    arr = pa.array(["".join(pieces) for pieces in lines], pa.string()).slice(0)
    got = []
    for byte_scan in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(classify, "BYTE_SCAN", byte_scan)
            *masks, blank = classify._prefixes(arr)
        got.append(([m.tolist() for m in masks], blank))
    assert got[0] == got[1]
    assert got[0][1] == sum(not pieces or not "".join(pieces) for pieces in lines)


def test_words_need_two_bytes():
    with pytest.raises(ValueError, match="two bytes"):
        scan.Words(["a", "bcd"])


@pytest.mark.parametrize(
    "log",
    ["fixtures/example.log", "fixtures/lines/messy.log", "fixtures/sim/messy.log"]
    + ["fixtures/lines/tracing.log", "fixtures/sim/failures.log"],
)
def test_classify_is_the_same_both_ways_on_real_logs(monkeypatch, log):
    arr, _ = classify.split_lines((ROOT / log).read_bytes(), 1 << 16)
    out = []
    for byte_scan in (True, False):
        monkeypatch.setattr(classify, "BYTE_SCAN", byte_scan)
        for full in (False, True):
            c = classify.classify(arr, full=full)
            out.append((full, c.counts, c.index.tolist(), c.tracing.tolist()))
            out.append([p.tolist() for p in c.prefixed])
            if c.clock is not None:
                out.append(c.clock.tolist())
    half = len(out) // 2
    assert out[:half] == out[half:]
    if log == "fixtures/example.log":  # (lines of every kind, some of them selected)
        assert out[0][1]["tracing"] > 100 and len(out[0][2]) < len(arr)


_COMPILED_ONLY = pytest.mark.skipif(
    not scan.COMPILED, reason="the memchr loop runs compiled only (tests/test_compiled.py)"
)


@_COMPILED_ONLY
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200), st.sampled_from([b"", b"\n", b"\n\n", b"x"]))
def test_the_line_loop_makes_the_buffers_numpy_makes(data, tail):
    """``scan.line_breaks`` (the compiled build's split of a chunk into lines) against
    ``classify.line_buffers``: the same line ends and bytes, with or without a last newline,
    empty lines and a chunk of none."""
    data += tail
    offsets, text = scan.line_breaks(data)
    want_offsets, want_text = classify.line_buffers(data)
    assert offsets.dtype == np.int32
    assert offsets.tolist() == want_offsets.tolist()
    assert text.tobytes() == want_text


@_COMPILED_ONLY
def test_split_lines_is_the_same_both_ways_on_a_real_log(monkeypatch):
    # (as ``sources`` hands text on: valid UTF-8)
    data = (ROOT / "fixtures" / "sim" / "messy.log").read_bytes().decode("utf-8", "replace")
    data = data.encode("utf-8")
    got = []
    for line_scan in (True, False):
        monkeypatch.setattr(classify, "LINE_SCAN", line_scan)
        arr, cut = classify.split_lines(data, 200)
        got.append((arr.to_pylist(), cut))
    assert got[0] == got[1]
    # (its last line has no newline; some lines are longer than the limit)
    assert len(got[0][0]) == data.count(b"\n") + 1 and got[0][1] > 0
