"""The column-wise parse of fixed-form lines gives, line for line, the per-line parsers' event.

``parse_fixed`` takes only lines in the exact printed form of a format string and leaves every
other line to the parser of its family; these tests hold it to that on real logs and on lines
mutated around the fixed forms (spacing, signs, digits, keys, torn and foreign text).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.ingest.parse import columnar, parse_text
from cuzk_diag.ingest.parse.columnar import parse_fixed
from cuzk_diag.ingest.parse.timeline import parse_timeline
from cuzk_diag.ingest.parse.timing import parse_ntt_h, parse_timing
from cuzk_diag.ingest.parse.tracing import parse_tracing
from cuzk_diag.records import Accounting, Event, Family

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def bulk_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan of C++ and TIMELINE lines runs in these tests in the pure build too (where the
    pipeline leaves those lines to the per-line parsers), so that its code is held to theirs
    in every build."""
    monkeypatch.setattr(columnar, "BULK_SCAN", True)


def _per_line(ln: str, no: int, clock: bool) -> Event | None:
    """The event the per-line parsers give for ``ln`` (None: no line of a family read in bulk)."""
    acc = Accounting()
    if clock:
        return Event(no, 0, Family.TRACING, "clock", {"ts": ln[: ln.find(" ")]})
    if ln.startswith("CUZK_TIMING: "):
        return parse_timing(ln, no, 0, acc)
    if ln.startswith("CUZK_NTT_H: "):
        return parse_ntt_h(ln, no, 0, acc)
    if ln.startswith("TIMELINE,"):
        return parse_timeline(ln, no, 0, acc)
    return parse_tracing(ln, no, 0, False)  # (a tracing line of a frequent shape: ``shapes``)


def _check(lines: list[str], clock: list[bool] | None = None) -> int:
    """Compare every bulk-parsed line with its per-line event; returns how many were bulk."""
    index = np.arange(len(lines))
    marks = np.array(clock if clock is not None else [False] * len(lines), dtype=bool)
    slots = parse_fixed(pa.array(lines, pa.string()), index, 1, 0, marks)
    taken = 0
    for i, (ln, ev) in enumerate(zip(lines, slots, strict=True)):
        if ev is None:
            continue
        taken += 1
        want = _per_line(ln, i + 1, bool(marks[i]))
        assert want is not None, ln
        _reads_as(ev, want.fields, ln)
        assert ev == want, ln
        assert list(ev.fields) == list(want.fields), ln  # key order: the line table's JSON
    return taken


#: Keys the assembly asks lines for that some of them do not hold.
_ASKED = ["snap_partition", "kind", "monolithic", "worker", "gpu_ms", "gpu_tid", "gpu", "ts"]


def _reads_as(ev: Event, want: dict[str, object], ln: str) -> None:
    """A bulk-parsed line's event reads its fields from its group's columns
    (``Event.get``, ``Event.has``) as ``want`` holds them, and copies them as a loop over
    ``want`` would (``Event.copy_fields``: without the keys dropped, renamed), without making
    its dict."""
    assert ev._fields is None, ln
    for key in [*want, *_ASKED, "".join(list("partition"))]:
        assert ev.get(key) == want.get(key), (ln, key)
        assert ev.has(key) is (key in want), (ln, key)
    drop = frozenset({"gpu_tid", "offset_ms"})
    for ren in (None, {k: k.upper() for k in list(want)[1:]}):
        into: dict[str, object] = {"before": 0}
        ev.copy_fields(into, drop, ren)
        copied = {(ren or {}).get(k, k): v for k, v in want.items() if k not in drop}
        assert into == {"before": 0, **copied}, ln
        assert list(into) == ["before", *copied], ln  # (in the fields' order)
    assert ev._fields is None, ln


def test_fixture_logs_parse_the_same_in_bulk() -> None:
    """Every fixture log: the bulk events equal the per-line ones, and the bulk takes the
    fixed-form lines (almost all C++ and TIMELINE lines of a clean log)."""
    fixed = taken = 0
    for path in sorted((ROOT / "fixtures").rglob("*.log")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        taken += _check(lines)
        fixed += sum(ln.startswith(("CUZK_TIMING: ", "CUZK_NTT_H: ", "TIMELINE,")) for ln in lines)
    assert fixed > 5_000
    assert taken > 0.9 * fixed


def test_clock_lines_keep_their_timestamp() -> None:
    lines = [
        "2026-03-01T10:00:00.123456Z  INFO cuzk_core::engine: anything",
        "CUZK_TIMING: prep_msm_ms=12",
        "2026-03-01T10:00:00.200000+01:00 DEBUG x: y",
    ]
    assert _check(lines, [True, False, True]) == 3


_KEYS = [
    "split_vectors_ms",
    "setup_to_split_ms",
    "prep_msm_ms",
    "gpu_tid",
    "ntt_msm_h_ms",
    "tail_msm_ms",
    "gpu_total_ms",
    "mutex_held_ms",
    "total_start_fn_ms",
    "b_g2_msm_ms",
    "num_circuits",
    "prestage_setup",
    "host_register",
    "domain",
    "lot_of_memory",
    "err",
    "free_mib",
    "total_mib",
    "bogus",
]
_VALUES = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["", "+5", "007", "-0", "٣", "1.5", "x", "5ms", "9" * 19, " 5"]),
    st.sampled_from(["ok", "skip_vram", "fallback", "ok2", "okx", "Ok"]),
)
_SEP = st.sampled_from([" ", " ", " ", "  ", "\t", ","])


@st.composite
def timing_lines(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 4))
    parts = [f"{draw(st.sampled_from(_KEYS))}={draw(_VALUES)}" for _ in range(n)]
    if draw(st.integers(0, 4)) == 0:
        parts.insert(0, draw(st.sampled_from(["prestage_vram", "prestage_vram=", "word"])))
    body = "".join(draw(_SEP) + p for p in parts)[1:]
    return (
        draw(st.sampled_from(["CUZK_TIMING: ", "CUZK_TIMING:  "]))
        + body
        + draw(st.sampled_from(["", "", " ", "x"]))
    )


@st.composite
def ntt_h_lines(draw: st.DrawFn) -> str:
    keys = ["d_b_alloc", "ntt_kernels", "coset_intt_sync", "msm_init", "msm_invoke"]
    keys += ["msm_dtor", "total"]
    if draw(st.booleans()):
        keys = draw(st.permutations(keys))
    unit = st.sampled_from(["ms", "ms", "ms", "", "us"])
    return "CUZK_NTT_H: " + " ".join(f"{k}={draw(_VALUES)}{draw(unit)}" for k in keys)


_DETAIL_PARTS = st.one_of(
    st.builds(
        lambda k, v: f"{k}={v}",
        st.sampled_from(["partition", "worker", "gpu_ms", "synth_ms", "snap_partition", "x"]),
        _VALUES,
    ),
    st.builds(lambda v: f"kind={v}", st.sampled_from(["porep", "", "a=b", "snap"])),
    st.sampled_from(["monolithic", "monolithic=2", "", "word", "kind"]),
)


@st.composite
def timeline_lines(draw: st.DrawFn) -> str:
    off = draw(st.one_of(st.integers(0, 10**20).map(str), st.sampled_from(["", "-1", "１"])))
    event = draw(st.sampled_from(["GPU_START", "GPU_END", "SYNTH_START", "CHAN_SEND", "NOPE"]))
    job = draw(st.sampled_from(["job-1", "", "a b", "CUZK_x", "2026-03-01T10:00:00Z x"]))
    detail = ",".join(draw(st.lists(_DETAIL_PARTS, max_size=draw(st.sampled_from([4, 4, 11])))))
    tail = draw(st.sampled_from(["", "", "CUZK_TIMING: prep_msm_ms=1", "TIMELINE,1,GPU_END,j,"]))
    return f"TIMELINE,{off},{event},{job},{detail}{tail}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(timing_lines(), ntt_h_lines(), timeline_lines()), min_size=1))
def test_mutated_lines_parse_the_same_in_bulk(lines: list[str]) -> None:
    _check(lines)


def test_the_format_strings_that_print_a_word_are_read_in_bulk() -> None:
    """The ``CUZK_TIMING:`` lines that print a word (``prestage_setup=ok``, ``=skip_vram``,
    ``=fallback``, ``host_register=fallback``) and T10's ``prestage_vram`` with its bare word
    are read in bulk in their exact form, as the per-line parser reads them; near forms (another
    word, a word with a digit, a missing or extra key, a sign, a word where a number goes) are
    left to it."""
    exact = [
        "CUZK_TIMING: prestage_vram free_mib=15174 usable_mib=14662 need_da_mib=4096 "
        "need_dbc_mib=8192 total_mib=12288",
        "CUZK_TIMING: prestage_setup=ok domain=134217728 lot_of_memory=1",
        "CUZK_TIMING: prestage_setup=ok domain=134217728 lot_of_memory=1 sync_ms=2 trim_ms=0 "
        "alloc_ms=9 upload_ms=7 total_ps_ms=18",
        "CUZK_TIMING: prestage_setup=fallback err=2",
        "CUZK_TIMING: prestage_setup=skip_vram",
        "CUZK_TIMING: host_register=fallback err=700",
    ]
    near = [
        "CUZK_TIMING: prestage_vram free_mib=1 usable_mib=1 need_da_mib=1 need_dbc_mib=1",
        "CUZK_TIMING: prestage_vram  free_mib=1 usable_mib=1 need_da_mib=1 need_dbc_mib=1 "
        "total_mib=1",
        "CUZK_TIMING: prestage_setup=ok domain=1",
        "CUZK_TIMING: prestage_setup=ok domain=1 lot_of_memory=x",
        "CUZK_TIMING: prestage_setup=ok2 domain=1 lot_of_memory=1",
        "CUZK_TIMING: prestage_setup=okay domain=1 lot_of_memory=1",
        "CUZK_TIMING: prestage_setup=fallback err=-2",
        "CUZK_TIMING: prestage_setup=skip_vram extra=1",
        "CUZK_TIMING: prestage_setup=skip_vram ",
        "CUZK_TIMING: prestage_setup=",
        "CUZK_TIMING: host_register=ok err=1",
        "CUZK_TIMING: prep_msm_ms=ok",
    ]
    assert _check(exact) == len(exact)
    _check(near)
    index = np.arange(len(near))
    taken = parse_fixed(pa.array(near, pa.string()), index, 1, 0, np.zeros(len(near), bool))
    assert taken == [None] * len(near)


def test_edge_lines_parse_the_same_in_bulk() -> None:
    """Lines that end or break where the byte scan of C++ and TIMELINE lines turns: at a
    prefix, a ``=``, a comma, a sign, an 18th and a 19th digit, a word past the eighth, text
    that is not ASCII next to the bytes the scan looks for."""
    lines = [
        "CUZK_TIMING: ",
        "CUZK_TIMING: prep_msm_ms=",
        "CUZK_TIMING: prep_msm_ms=1=2",
        "CUZK_TIMING: prep_msm_ms=" + "9" * 18,
        "CUZK_TIMING: prep_msm_ms=" + "9" * 19,
        "CUZK_TIMING: prep_msm_ms=0000000000000000000000012",
        "CUZK_TIMING: prep_msm_ms=12é",
        "CUZK_TIMING: gpu_tid=0 batch_add_ms=4 03",
        "CUZK_TIMING: gpu_tid=0 batch_add_ms=4\u00e9",
        "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=1ms coset_intt_sync=2ms msm_init=0ms "
        "msm_invoke=3ms msm_dtor=0ms total=6ms x=1",
        "TIMELINE,",
        "TIMELINE,1",
        "TIMELINE,1,GPU_START",
        "TIMELINE,1,GPU_START,j",
        "TIMELINE,1,GPU_START,j,",
        "TIMELINE,1,GPU_START,,",
        "TIMELINE,1,GPU_STARTé,j,",
        "TIMELINE,1,GPU_STAR,j,",
        "TIMELINE,01,GPU_END,j,gpu_ms=-0",
        "TIMELINE," + "1" * 18 + ",GPU_END,j,gpu_ms=5",
        "TIMELINE," + "1" * 19 + ",GPU_END,j,gpu_ms=5",
        "TIMELINE,1,GPU_END,j,gpu_ms=" + "9" * 18,
        "TIMELINE,1,GPU_END,j,gpu_ms=-" + "9" * 18,
        "TIMELINE,1,GPU_END,j,gpu_ms=" + "9" * 19,
        "TIMELINE,1,GPU_END,j,gpu_ms=-",
        "TIMELINE,1,GPU_END,j,gpu_ms=5-",
        "TIMELINE,1,GPU_END,j,gpu_ms=5,",
        "TIMELINE,1,GPU_END,j,,gpu_ms=5",
        "TIMELINE,1,SYNTH_START,j,partition=1,kind=é,monolithic",
        "TIMELINE,1,SYNTH_START,j,kind=a=b,partition=2",
        "TIMELINE,1,GPU_END,jobé,worker=1,gpu_ms=2",
        "TIMELINE,1,GPU_END,j,worker=1,gpu_ms=2,partition=3,synth_ms=4,snap_partition=5,"
        "kind=k,monolithic",
        "TIMELINE,1,GPU_END,j," + ",".join(["monolithic"] * 9),
        "TIMELINE,1,GPU_END,j,worker=1Z x",
        "TIMELINE,1,GPU_END,CUZK,worker=1",
        "TIMELINE,1,GPU_END,CUZK_,worker=1",
        "TIMELINE,1,GPU_END,j,worker=1TIMELINE,",
        "TIMELINE,1,GPU_END,j,worker=1TIMELINE",
        "TIMELINE,1,GPU_END,Z,worker=1",
    ]
    taken = _check(lines)
    assert taken == 13  # (the lines in an exact form are still read in bulk)


def test_a_log_through_the_parser_equals_line_by_line() -> None:
    """Whole text through ``LineParser``: the same events as the per-line parsers give."""
    lines = [
        "CUZK_TIMING: prep_msm_ms=12",
        "CUZK_TIMING: prep_msm_ms=+12",
        "TIMELINE,5,GPU_START,j1,partition=3,worker=0",
        "TIMELINE,6,GPU_END,j1,worker=0,gpu_ms=7,monolithic",
        "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=1ms coset_intt_sync=2ms msm_init=0ms "
        "msm_invoke=3ms msm_dtor=0ms total=6ms",
    ]
    events, acc = parse_text("\n".join(lines) + "\n")
    assert [tuple(e) for e in events] == [
        tuple(_per_line(ln, i + 1, False) or ()) for i, ln in enumerate(lines)
    ]
    assert acc.lines_total == len(lines)


def test_without_the_scan_the_per_line_parsers_give_the_same_events() -> None:
    """The pure build's way (no scan of C++ and TIMELINE lines) and the compiled build's give
    the same events for a whole log, bulk lines and others."""
    text = (ROOT / "fixtures" / "example.log").read_text(encoding="utf-8")
    scanned, acc = parse_text(text)
    columnar.BULK_SCAN = False  # (the fixture restores it)
    per_line, acc_per_line = parse_text(text)
    assert [tuple(e) for e in scanned] == [tuple(e) for e in per_line]
    assert acc.by_family == acc_per_line.by_family
    assert sum(e.family in (Family.TIMING, Family.TIMELINE) for e in scanned) > 900


_INT64 = st.integers(-(2**63), 2**63 - 1)
_WORD = st.text(alphabet=st.sampled_from(list('ab "\\é{}=,0')), max_size=5)


@st.composite
def join_pieces(draw: st.DrawFn) -> tuple[list[object], int]:
    """Texts, int64 columns and string columns of one number of rows."""
    n = draw(st.integers(0, 5))
    kinds = draw(st.lists(st.sampled_from(["text", "int", "str"]), min_size=1, max_size=6))
    pieces: list[object] = []
    for kind in kinds:
        if kind == "text":
            pieces.append(draw(_WORD))
        elif kind == "int":
            pieces.append(pa.array(draw(st.lists(_INT64, min_size=n, max_size=n)), pa.int64()))
        else:
            col = pa.array(draw(st.lists(_WORD, min_size=n + 1, max_size=n + 1)), pa.string())
            pieces.append(col.slice(1))  # (a column that starts inside its buffers)
    return pieces, n


@settings(max_examples=300, deadline=None)
@given(join_pieces())
def test_the_joined_rows_are_the_kernels_join(case: tuple[list[object], int]) -> None:
    """``scan.joined``'s loop writes each row as the kernels it replaces do: every integer
    column cast to text, then ``binary_join_element_wise``."""
    import pyarrow.compute as pc

    from cuzk_diag.ingest.parse import scan

    pieces, n = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "COMPILED", True)  # (the loop runs as Python in the pure build)
        got = scan.joined(pieces, n)
    assert got is not None
    cast = [
        pc.cast(p, pa.string()) if isinstance(p, pa.Array) and pa.types.is_int64(p.type) else p
        for p in pieces
    ]
    if any(isinstance(p, pa.Array) for p in pieces):
        want = pc.binary_join_element_wise(*cast, "").to_pylist()
    else:
        want = ["".join(str(p) for p in pieces)] * n
    assert got.to_pylist() == want


_TEXT_OR_NULL = st.one_of(st.none(), _WORD)


@st.composite
def text_pieces(draw: st.DrawFn) -> tuple[list[object], list[int], list[int] | None]:
    """Pieces of a text column (texts every row of a piece holds, pieces of nulls, string
    arrays with nulls, sliced), their sizes, and an order of their rows (or none)."""
    pieces: list[object] = []
    sizes: list[int] = []
    for _ in range(draw(st.integers(0, 5))):
        size = draw(st.integers(0, 12))
        kind = draw(st.sampled_from(["text", "none", "array"]))
        if kind == "text":
            pieces.append(draw(_WORD))
        elif kind == "none":
            pieces.append(None)
        else:
            values = draw(st.lists(_TEXT_OR_NULL, min_size=size + 2, max_size=size + 2))
            pieces.append(pa.array(values, pa.string()).slice(1, size))  # (inside its buffers)
        sizes.append(size)
    n = sum(sizes)
    order = draw(st.one_of(st.none(), st.permutations(range(n))))
    return pieces, sizes, order


@settings(max_examples=400, deadline=None)
@given(text_pieces())
def test_gathered_texts_are_the_concatenation_taken_in_order(
    case: tuple[list[object], list[int], list[int] | None],
) -> None:
    """``scan.TextGather`` gives the column ``pa.concat_arrays`` and ``take`` give, nulls and
    all, from pieces of every kind."""
    from cuzk_diag.ingest.parse import scan

    pieces, sizes, order = case
    at = None if order is None else np.array(order, dtype=np.int64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "COMPILED", True)  # (the loop runs as Python in the pure build)
        got = scan.TextGather(sizes, at).texts(pieces)
    assert got is not None
    whole = pa.concat_arrays(
        [
            pa.nulls(size, pa.string())
            if piece is None
            else pa.array([piece] * size, pa.string())
            if isinstance(piece, str)
            else piece
            for piece, size in zip(pieces, sizes, strict=True)
        ]
        or [pa.array([], pa.string())]
    )
    want = whole if at is None else whole.take(pa.array(at, pa.int64()))
    got.validate(full=True)
    assert got.to_pylist() == want.to_pylist()
    assert got.null_count == want.null_count


def test_gathered_texts_leave_other_columns_to_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cuzk_diag.ingest.parse import scan

    monkeypatch.setattr(scan, "COMPILED", True)
    assert scan.TextGather([2], None).texts([pa.array(["a", "b"], pa.large_string())]) is None
    assert scan.TextGather([2], None).texts([pa.array(["a"], pa.string())]) is None


def test_a_column_with_a_null_is_joined_by_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuzk_diag.ingest.parse import scan

    monkeypatch.setattr(scan, "COMPILED", True)
    assert scan.joined(["{", pa.array([1, None], pa.int64()), "}"], 2) is None
    assert scan.joined(["{", pa.array([1.5, 2.0]), "}"], 2) is None


def test_the_escape_loop_finds_the_bytes_json_escapes() -> None:
    """``scan.json_escaped`` (the compiled build's test of a text column's bytes): true for a
    quote, a backslash or a control character among any other bytes, for no other byte."""
    from cuzk_diag.ingest.parse.scan import json_escaped

    for byte in range(256):
        data = np.array([65, 0xC3, byte, 0xA9, 66], dtype=np.uint8)
        assert json_escaped(data.data) == (byte < 32 or byte in (34, 92)), byte
        assert json_escaped(np.full(40, byte, dtype=np.uint8).data) == (
            byte < 32 or byte in (34, 92)
        )
    assert not json_escaped(np.zeros(0, dtype=np.uint8).data)


def test_texts_are_cut_from_starts_and_ends_read_in_place() -> None:
    """``scan.texts`` takes each text between its start and end, read where they lie (a
    column of a larger array, strided), empty texts and longer characters among them."""
    from cuzk_diag.ingest.parse.scan import texts

    line = "ab é€ cd  x".encode()
    pieces = [(0, 2), (3, 5), (2, 2), (5, 8), (len(line) - 1, len(line)), (0, len(line))]
    spans = np.zeros((len(pieces), 3, 2), dtype=np.int64)
    spans[:, 1] = pieces
    data = np.frombuffer(line, dtype=np.uint8)
    got = texts(data, spans[:, 1, 0], spans[:, 1, 1])
    assert got.to_pylist() == [line[a:b].decode() for a, b in pieces]
    assert texts(data, spans[:0, 1, 0], spans[:0, 1, 1]).to_pylist() == []
