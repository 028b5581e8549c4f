"""The text exports' text made a column at a time: JSON Lines (``writers.jsonl_lines``) is the
text the JSON encoder makes of each row as a dict, as ``json.dumps`` writes it; timestamps
(``writers.timestamp_text``, CSV and JSON Lines) are the text of Arrow's ``strftime``."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.ingest.parse.classify import utf8_bytes
from cuzk_diag.linetable import LINE_SCHEMA, iter_line_tables
from cuzk_diag.records import Accounting
from cuzk_diag.writers import (
    JSONL_ROWS,
    TIMESTAMP_FORMAT,
    TableWriter,
    jsonl_lines,
    timestamp_text,
    timestamps_as_text,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def rows_text(table: pa.Table) -> str:
    """The reference: each row's dict by ``json.dumps`` (what JSON Lines exports wrote)."""
    return "".join(
        json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in table.to_pylist()
    )


def columns_text(table: pa.Table) -> str:
    return bytes(utf8_bytes(jsonl_lines(table))).decode("utf-8")


#: Texts with what JSON escapes (quotes, backslashes, control characters), what it does not
#: (DEL, non-ASCII, astral characters) and JSON-looking text (the line table's fields).
_TEXT = st.text(
    alphabet=st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "😀", "a", " ", "{"]),
    max_size=8,
)
_COLUMNS = {
    "i64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "i32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "flag": (pa.bool_(), st.booleans()),
    "text": (pa.string(), _TEXT),
    "ms": (
        pa.float64(),
        st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 1e22, 1e-7]),
    ),
    "ts": (
        pa.timestamp("ms", tz="UTC"),
        st.integers(-62_135_596_800_000, 253_402_300_799_999),
    ),
}


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    names = draw(st.lists(st.sampled_from(sorted(_COLUMNS)), min_size=1, max_size=8))
    n = draw(st.integers(0, 12))
    arrays, fields = [], []
    for i, name in enumerate(names):
        typ, values = _COLUMNS[name]
        col = draw(st.lists(st.none() | values, min_size=n, max_size=n))
        arrays.append(pa.array(col, pa.int64()).cast(typ) if name == "ts" else pa.array(col, typ))
        fields.append(pa.field(f"{name}{i}", typ))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    start = draw(st.integers(0, n))
    return table.slice(start, draw(st.integers(0, n - start)))  # (offsets into the buffers)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_the_columns_make_the_text_of_each_row_s_dict(table: pa.Table) -> None:
    table = timestamps_as_text(table)
    assert columns_text(table) == rows_text(table)


def test_a_column_of_nulls_or_empty_texts_and_a_table_without_rows() -> None:
    table = pa.table(
        {
            "nulls": pa.array([None, None], pa.string()),
            "empty": ["", ""],
            "mixed": ["", None],
        }
    )
    assert (
        columns_text(table)
        == rows_text(table)
        == '{"nulls": null, "empty": "", "mixed": ""}\n'
        + ('{"nulls": null, "empty": "", "mixed": null}\n')
    )
    assert columns_text(table.slice(0, 0)) == ""


def test_the_writer_writes_a_long_table_in_slices_as_one_text(tmp_path: Path) -> None:
    n = 3 * JSONL_ROWS + 5
    table = pa.Table.from_batches(
        [
            pa.record_batch(
                {"row": pa.array(range(lo, min(lo + 1000, n)), pa.int64())}
                | {"text": pa.array([f'r"{i}\\' for i in range(lo, min(lo + 1000, n))])}
            )
            for lo in range(0, n, 1000)
        ]
    )
    out = tmp_path / "t.jsonl"
    with TableWriter(str(out), "jsonl", table.schema) as w:
        w.write(table)
    assert out.read_text(encoding="utf-8") == rows_text(table)


@pytest.mark.parametrize("name", ["sim/messy.log", "sim/damaged.log", "lines/messy.log"])
def test_a_messy_log_s_line_table(name: str) -> None:
    """Every family of line, torn and damaged ones among them: the text of each row."""
    tables = list(iter_line_tables([str(FIXTURES / name)], Accounting()))
    table = pa.concat_tables(tables).cast(LINE_SCHEMA)
    assert table.num_rows > 0
    assert columns_text(table) == rows_text(table)


#: Seconds since the epoch of 0001-01-01 and of 9999-12-31T23:59:59, the years ``%Y`` writes
#: with four digits.
_FIRST, _LAST = -62_135_596_800, 253_402_300_799


@st.composite
def timestamp_columns(draw: st.DrawFn) -> pa.Array:
    unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
    per = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    lo, hi = max(_FIRST * per, -(2**63)), min(_LAST * per + per - 1, 2**63 - 1)
    inside = st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1, 1, 951_782_400 * per])
    values = inside | st.integers(-(2**63), 2**63 - 1) if draw(st.booleans()) else inside
    ticks = draw(st.lists(st.none() | values, max_size=20))
    tz = draw(st.sampled_from(["UTC", None, "Europe/Berlin"]))
    col = pa.array(ticks, pa.int64()).cast(pa.timestamp(unit, tz=tz))
    start = draw(st.integers(0, len(col)))
    return col.slice(start)


@settings(max_examples=400, deadline=None)
@given(timestamp_columns())
def test_timestamp_text_is_arrow_s_strftime(col: pa.Array) -> None:
    """In every unit, over the years 1-9999 (by numpy), and beyond them or in another time
    zone (by Arrow), with nulls and sliced columns."""
    want = pc.strftime(col, format=TIMESTAMP_FORMAT)
    got = timestamp_text(col)
    assert got.type == pa.string()
    assert got.to_pylist() == want.to_pylist()
    assert got.equals(want)


def test_timestamp_text_of_a_chunked_column_and_of_the_calendar_s_edges() -> None:
    ms = [
        _FIRST * 1000,  # 0001-01-01
        _LAST * 1000 + 999,  # 9999-12-31T23:59:59.999
        951_782_400_000,  # 2000-02-29
        -86_400_000,  # 1969-12-31
        4_107_542_400_000,  # 2100-03-01 (2100 is no leap year)
        None,
    ]
    col = pa.chunked_array([ms[:3], ms[3:]], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    assert timestamp_text(col).to_pylist() == [
        "0001-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999Z",
        "2000-02-29T00:00:00.000Z",
        "1969-12-31T00:00:00.000Z",
        "2100-03-01T00:00:00.000Z",
        None,
    ]
