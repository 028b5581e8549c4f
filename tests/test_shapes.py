"""Tracing lines parsed column-wise by their printed shape (``ingest.parse.shapes``) give the
events and line-table rows the per-line parser gives, line for line, whatever their values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.ingest.parse import LineParser, scan, shapes
from cuzk_diag.ingest.parse.classify import tracing_heads
from cuzk_diag.ingest.parse.columnar import extract_fixed
from cuzk_diag.ingest.parse.scan import buffers
from cuzk_diag.ingest.pool import map_parts
from cuzk_diag.ingest.stream import parse_chunks
from cuzk_diag.linetable import chunk_lines
from cuzk_diag.records import Accounting

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def by_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The column-wise parse of tracing shapes runs in these tests in the pure build too
    (where the parse leaves tracing lines to the per-line parser), so that its code is held to
    the per-line parser's in every build; the tests that compare set it either way."""
    monkeypatch.setattr(shapes, "ENABLED", True)


LOGS = sorted(str(p) for p in (ROOT / "fixtures").rglob("*.log"))

TS = "2026-03-13T15:14:{:02d}.{:06d}Z"
#: Lines of a few shapes, each printed with values the per-line parser reads differently.
SPAN = (
    "{ts}  INFO gpu_worker{{worker_id={w} gpu=1 job_id={job} partition={part}}}: "
    "cuzk_core::engine: GPU_TIMING hot_path pre-prove overhead worker_id={w2} ms={ms}"
)
PLAIN = "{ts}  INFO cuzk_core::engine: partition GPU prove complete job_id={job} gpu_ms={ms}"
#: A message of no known kind: analysis keeps only its message unless it is a warning.
OTHER = "{ts}  {level} cuzk_core::engine: slot refilled job_id={job} free={ms}"
VALUES = [
    # (w, w2, job, part, ms): the common form first, then the odd ones
    ("2", "2", "c324c985-9b81", "Some(1)", "3021"),
    ("3", "3", "c324c985-9b82", "Some(0)", "-12"),
    ("1", "4", "a-b", "None", "0"),  # a repeated key with another value; None
    ("0", "0", '"quoted"', "Some(-3)", "007"),  # quoted text, leading zeros
    ("0", "0", "123", "Some(x)", "9" * 25),  # a job id of digits; Some(text); 25 digits
    ("0", "0", "None", "7", '"5"'),  # the text None; a quoted number
    ("0", "0", "µs-job", "Some(2)", "1.5"),  # non-ASCII; a decimal
    ("0", "0", "", "Some(2)", "5"),  # an empty value
    ("0", "0", '"two words"', "Some(2)", "5"),  # a quoted value with a space
    ("0", "0", "a\tb", "Some(2)", "5 trailing words"),  # a tab; a value with spaces
    ("0", "0", "x{y}", "Some(2)", "5"),  # braces
    ("0", "0", "Some(1)", "Some(2)", "-"),
]


def _odd_log() -> str:
    lines = []
    for rep in range(12):
        for i, (w, w2, job, part, ms) in enumerate(VALUES):
            ts = TS.format(rep % 60, i)
            lines.append(SPAN.format(ts=ts, w=w, w2=w2, job=job, part=part, ms=ms))
            lines.append(PLAIN.format(ts=ts, job=job, ms=ms))
            lines.append(PLAIN.format(ts=ts, job=job, ms=ms).replace("  INFO", " INFO") + " ")
            lines.append(OTHER.format(ts=ts, level="INFO", job=job, ms=ms))
            lines.append(OTHER.format(ts=ts, level="WARN", job=job, ms=ms))
    return "\n".join(lines) + "\n"


def _both(inputs: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    out = []
    for on in (False, True):
        monkeypatch.setattr(shapes, "ENABLED", on)
        acc = Accounting()
        parts = [t for _, t, _ in map_parts(inputs, acc, chunk_lines, chunk_size=16384)]
        out.append((pa.concat_tables(parts), acc.to_dict()))
    return out[0], out[1]


def test_every_fixture_gives_the_same_line_table(monkeypatch: pytest.MonkeyPatch) -> None:
    (per_line, acc1), (by_shape, acc2) = _both(LOGS, monkeypatch)  # type: ignore[misc]
    assert per_line.num_rows > 5000
    assert per_line.equals(by_shape) and acc1 == acc2


def test_analysis_parse_of_every_fixture_gives_the_same_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without ``full`` (analysis) only the tracing lines analysis needs are parsed.
    got = []
    for on in (False, True):
        monkeypatch.setattr(shapes, "ENABLED", on)
        acc = Accounting()
        got.append(([e for _, es, _, _ in parse_chunks(LOGS, acc, full=False) for e in es], acc))
    (per_line, acc1), (by_shape, acc2) = got
    assert len(per_line) > 5000 and per_line == by_shape
    assert acc1.to_dict() == acc2.to_dict()


@pytest.mark.parametrize("full", [True, False])
def test_odd_values_give_the_same_events_and_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full: bool
) -> None:
    text = _odd_log()
    events = []
    for on in (False, True):
        monkeypatch.setattr(shapes, "ENABLED", on)
        events.append(LineParser(full=full).feed(text))
    # (Analysis parses the warnings and the messages it knows, not every line.)
    assert len(events[0]) == (text.count("\n") if full else 12 * len(VALUES))
    assert events[0] == events[1]
    for a, b in zip(events[0], events[1], strict=True):
        assert list(a.fields) == list(b.fields)  # the same key order (the line table's JSON)
    log = tmp_path / "odd.log"
    log.write_text(text)
    (per_line, _), (by_shape, _) = _both([str(log)], monkeypatch)  # type: ignore[misc]
    assert per_line.equals(by_shape)


def test_the_common_forms_are_read_column_wise() -> None:
    text = _odd_log()
    sel = pa.array(text.splitlines(), pa.string())
    index = np.arange(len(sel))
    heads = tracing_heads(sel)
    groups = extract_fixed(sel, index, 1, None, heads, full=True)
    rows = np.concatenate([g.rows for g in groups])
    # The common forms (the first two value rows) of both shapes, in both spacings.
    assert len(rows) >= 12 * 2 * 3 and len(set(rows.tolist())) == len(rows)
    kinds = {g.kind for g in groups}
    assert kinds == {"gpu_timing_overhead", "partition_gpu_complete", "tracing"}
    # Without ``full``, only shapes the per-line parser reads whole then too: known messages,
    # and the warnings of no known message (not the INFO ones).
    quick = extract_fixed(sel, index, 1, None, heads, full=False)
    assert {(g.kind, g.cols[1]) for g in quick if g.kind == "tracing"} == {("tracing", "WARN")}
    assert {g.kind for g in quick} == kinds


def test_a_shape_with_a_value_of_spaces_stays_with_the_per_line_parser() -> None:
    line = (
        "2026-03-13T15:13:22.637903Z  INFO cuzk_core::engine: initializing GPU workers "
        "num_gpus=2 gpu_workers_per_device=2 total_workers=4 gpus=[0, 1]"
    )
    assert shapes.shape_plan(line) is None
    plan = shapes.shape_plan(PLAIN.format(ts=TS.format(1, 1), job="j-1", ms="5"))
    assert plan is not None and plan.kind == "partition_gpu_complete" and plan.level == "INFO"
    assert plan.names == ["ts", "level", "target", "message", "job_id", "gpu_ms"]


def test_long_lines_and_many_fields_stay_with_the_per_line_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A plan's cost grows with its line: such shapes are not made into one.
    many = " ".join(f"k{i}={i}" for i in range(shapes.MAX_FIELDS + 5))
    long = "x" * shapes.MAX_LINE
    lines = [f"{TS.format(1, i)}  INFO cuzk_core::engine: many fields {many}" for i in range(10)]
    lines += [f"{TS.format(2, i)}  INFO cuzk_core::engine: long v={long}" for i in range(10)]
    assert all(shapes.shape_plan(ln) is None for ln in lines)
    text = "\n".join(lines) + "\n"
    events = []
    for on in (False, True):
        monkeypatch.setattr(shapes, "ENABLED", on)
        events.append(LineParser(full=True).feed(text))
    assert len(events[1]) == 20 and events[0] == events[1]
    assert len(events[1][0].fields) == shapes.MAX_FIELDS + 5 + 4


def test_a_cut_finds_its_piece_among_the_words_of_any_line_of_the_shape() -> None:
    line = '2026-03-13T15:14:01.000001Z  INFO w{id=7 job=ab}: t: m x=Some(12) y="é-q" z=1'
    pieces = ["2026-03-13T15:14:01.000001Z", "w{id=7 job=ab}", "=7", "Some(12)", '"é-q"', "=1"]
    starts = [line.rindex(p) + p.startswith("=") for p in pieces]
    ends = [line.rindex(p) + len(p) for p in pieces]
    cuts = [shapes.Cut.of(line, a, b) for a, b in zip(starts, ends, strict=True)]
    assert [(c.first, c.last) for c in cuts] == [(0, 0), (3, 4), (3, 3), (7, 7), (8, 8), (9, 9)]
    # The same shape printed with other values: every cut takes the other line's piece.
    other = '2026-03-13T15:14:02.5Z  INFO w{id=123 job=c}: t: m x=Some(-4) y="" z=77'
    short = "2026-03-13T15:14:02.5Z  INFO w{id=1}: t: m"  # (fewer words: not cut)
    data, offs, rows = buffers(pa.array([line, other, short]), np.arange(3))
    ok, taken = shapes.cut_pieces(data, offs, rows, line.count(" ") + 1, cuts)
    assert ok.tolist() == [True, True, False]
    assert [t.to_pylist() for t in taken] == [
        ["2026-03-13T15:14:01.000001Z", "2026-03-13T15:14:02.5Z"],
        ["w{id=7 job=ab}", "w{id=123 job=c}"],
        ["7", "123"],
        ["Some(12)", "Some(-4)"],
        ['"é-q"', '""'],
        ["1", "77"],
    ]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab é€{}="')), min_size=1, max_size=30), st.data())
def test_a_cut_of_any_characters_of_a_line_takes_them(line: str, data: st.DataObject) -> None:
    """Any characters of a line, cut as ``Cut.of`` places them among its words, are what
    ``cut_fill`` takes from the line's bytes (an ASCII or a longer character, in the words
    before and after the piece)."""
    start = data.draw(st.integers(0, len(line)))
    end = data.draw(st.integers(start, len(line)))
    buf, offs, rows = buffers(pa.array([line]), np.arange(1))
    ok, (piece,) = shapes.cut_pieces(
        buf, offs, rows, line.count(" ") + 1, [shapes.Cut.of(line, start, end)]
    )
    assert ok.tolist() == [True]
    assert piece.to_pylist() == [line[start:end]]


#: The classes of value as RE2 tests them (what the byte loop of ``scan.cut_fill`` checks): a
#: whole number of 1-18 digits, one in ``Some(...)``, a quoted text and a plain text of
#: ``[!#-z|~]``, which is not a number, ``None`` or ``Some(...)``.
_CLASS_RE2 = {
    scan.CUT_INT: r"^-?[0-9]{1,18}$",
    scan.CUT_SOME: r"^Some\(-?[0-9]{1,18}\)$",
    scan.CUT_QUOTED: r'^"[!#-z|~]*"$',
    scan.CUT_TEXT: r"^[!#-z|~]*$",
}
_NOT_TEXT_RE2 = r"^(?:-?[0-9]+|None|Some\(.*\))$"
_VALUE = st.text(alphabet=st.sampled_from(list('0123456789-"Someon()Nx{}é~|\x7f')), max_size=22)
_VALUES = (
    st.sampled_from(
        [
            "0",
            "-0",
            "-",
            "",
            "1" * 18,
            "1" * 19,
            "-" + "9" * 18,
            "Some(1)",
            "Some(-12)",
            "Some()",
            "Some(1",
            'Some(1)"',
            '""',
            '"a"',
            '"a',
            '"é"',
            "None",
            "Nonex",
            "x(1)",
            "Some(x)",
            "--1",
        ]
    )
    | _VALUE
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_VALUES, min_size=1, max_size=6))
def test_a_value_is_of_its_class_as_the_regex_finds_it(values: list[str]) -> None:
    """``cut_fill`` takes a line's value when RE2 finds it of its class (each class in turn),
    and reads a whole number's value as a cast to int64 does, a quoted text's inside."""
    line = "ts " + " ".join(values)
    words = line.count(" ") + 1
    data, offs, rows = buffers(pa.array([line]), np.arange(1))
    col = pa.array(values, pa.string())
    for cls, regex in _CLASS_RE2.items():
        good = pc.match_substring_regex(col, regex)
        if cls == scan.CUT_TEXT:
            good = pc.and_not(good, pc.match_substring_regex(col, _NOT_TEXT_RE2))
        for f, value in enumerate(values):
            cut = shapes.Cut(f + 1, f + 1, 0, 0)
            ok, (piece,) = shapes.cut_pieces(data, offs, rows, words, [cut], [cls])
            assert ok.tolist() == [good[f].as_py()], (cls, value)
            if not ok[0]:
                continue
            if cls in (scan.CUT_INT, scan.CUT_SOME):
                digits = value[5:-1] if cls == scan.CUT_SOME else value
                assert piece.to_pylist() == [int(digits)]
            else:
                expect = value[1:-1] if cls == scan.CUT_QUOTED else value
                assert piece.to_pylist() == [expect]


#: The shape of a tracing line as RE2 would find it: the text after the first space with each
#: value after a ``=`` replaced by nothing (what ``scan.tracing_shape_fill`` writes).
_SHAPE_VALUE_RE2 = r'=(?:"[^"]*"|[^ {}]*)'
_SHAPE_TEXT = st.text(alphabet=st.sampled_from(list(' ="{}ab1é_:')), max_size=40)


@settings(max_examples=400, deadline=None)
@given(st.lists(_SHAPE_TEXT, min_size=1, max_size=8))
def test_the_scanned_shape_is_the_regex_replacement(bodies: list[str]) -> None:
    """The shape is the text with its values taken out, as the regex finds them; the spaces
    the same pass notes are every space of the line, quoted or not (as bytes: é is two)."""
    lines = [f"2026-03-13T15:14:01Z {b}" for b in bodies] + ["2026-03-13T15:14:01Z", " x", ""]
    sel = pa.array(lines, pa.string())
    data, offs, rows = buffers(sel, np.arange(len(lines)))
    shape, shape_at, (spaces, space_at) = shapes.scan_shapes(data, offs, rows)
    got = pa.StringArray.from_buffers(len(lines), pa.py_buffer(shape_at), pa.py_buffer(shape))
    after = [ln.partition(" ")[2] for ln in lines]
    want = pa.compute.replace_substring_regex(pa.array(after), _SHAPE_VALUE_RE2, "=")
    assert got.to_pylist() == want.to_pylist()
    for i, line in enumerate(lines):
        raw = line.encode()
        at = [int(p) - int(offs[rows[i]]) for p in spaces[space_at[i] : space_at[i + 1]]]
        assert at == [k for k, c in enumerate(raw) if c == 32], line


def test_lines_of_a_shape_with_their_words_shifted_stay_with_the_per_line_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One shape (the text but its values): a value with a space shifts the words after it,
    # and the values that then stand at the plan's places are of their class.
    line = "{ts}  INFO cuzk_core::engine: slot job_id={job} free={a} used={b}"
    values = [('"x"', "1", "2")] * 10 + [('"x y"', "1", "2"), ('"x y z"', "3", "4")]
    text = "".join(
        line.format(ts=TS.format(1, i), job=j, a=a, b=b) + "\n"
        for i, (j, a, b) in enumerate(values)
    )
    events = []
    for on in (False, True):
        monkeypatch.setattr(shapes, "ENABLED", on)
        events.append(LineParser(full=True).feed(text))
    assert events[0] == events[1]
    assert [ev.fields["job_id"] for ev in events[1][-2:]] == ["x y", "x y z"]
    sel = pa.array(text.splitlines(), pa.string())
    heads = tracing_heads(sel)
    (group,) = extract_fixed(sel, np.arange(len(sel)), 1, None, heads, full=True)
    assert group.rows.tolist() == list(range(10))


def test_a_shape_plan_made_in_one_chunk_serves_the_next_and_is_made_again_where_it_does_not_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chunk's lines of a shape are read by the plan an earlier chunk made (no new plan),
    and by a plan of their own where most of them do not fit it (the first chunk's values
    were whole numbers, the third's are texts); every chunk's events are the per-line
    parser's."""
    monkeypatch.setattr(shapes, "_PLANS", {})
    made: list[str] = []
    real = shapes.shape_plan

    def counted(line: str) -> shapes.Plan | None:
        made.append(line)
        return real(line)

    monkeypatch.setattr(shapes, "shape_plan", counted)
    line = "{ts}  INFO cuzk_core::engine: slot ready job_id={job} free={free}"
    chunks = [
        [line.format(ts=TS.format(1, i), job=100 + i, free=i) for i in range(12)],
        [line.format(ts=TS.format(2, i), job=200 + i, free=i) for i in range(12)],
        [line.format(ts=TS.format(3, i), job=f"j-{i}", free=i) for i in range(12)],
    ]
    texts = ["".join(ln + "\n" for ln in chunk) for chunk in chunks]
    columns, per_line = [], []
    for on, out in ((True, columns), (False, per_line)):
        monkeypatch.setattr(shapes, "ENABLED", on)
        parser = LineParser(full=True)
        for text in texts:
            out.append(parser.feed_parts(text))
        if on:
            assert len(made) == 2  # (the first chunk's plan, and the third's)
    for a, b in zip(columns, per_line, strict=True):
        assert len(a.groups) == 1 and len(a.groups[0].rows) == 12  # (read by columns)
        assert a.events() == b.events()
