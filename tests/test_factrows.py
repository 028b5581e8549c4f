"""Rows of facts held as columns (``cuzk_diag.factrows``): the run facts of every job and proof
read back exactly as they were put in, and write into a report as their dicts would."""

from __future__ import annotations

import copy
import json
import math
import pickle
import struct
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag import jsontext
from cuzk_diag.factrows import FactRows, KeyedFactRows, plain_rows
from cuzk_diag.jsontext import indented
from cuzk_diag.records import RunInfo
from cuzk_diag.rules.base import clean_value
from cuzk_diag.sanitize import neutralise_value, write_neutralised_json

FIELDS = ["num_partitions", "dispatch_line", "total_ms", "status", "wall_s", "ok"]

values = st.one_of(
    st.integers(min_value=-(1 << 70), max_value=1 << 70),  # (beyond 64 bits too)
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=80),
    st.sampled_from(["COMPLETED", "FAILED"]),
    st.none(),
    st.lists(st.integers(), max_size=3),
)
rows = st.dictionaries(st.sampled_from(FIELDS), values, max_size=len(FIELDS))


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types, in the same key order, a float's bits and all."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


def _staging(n: int) -> type[FactRows]:
    """``FactRows`` that make columns of every ``n`` rows appended (4,096 in use)."""
    return type(f"FactRows{n}", (FactRows,), {"__slots__": (), "STAGED": n})


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([1, 3, 4096]),
    st.lists(
        st.one_of(
            st.tuples(st.just("append"), rows),
            st.tuples(st.just("update"), st.integers(-40, 40), rows),
            st.tuples(st.just("replace"), st.integers(-40, 40), rows),
            st.tuples(st.just("read"), st.integers(-40, 40), st.just({})),
        ),
        max_size=40,
    ),
)
def test_rows_read_back_what_was_put_in(staged: int, ops: list[Any]) -> None:
    """Every value, of its type, in its row's key order, after appends, merges (as
    ``dict.update``: a known field keeps its place, a new one goes last) and replacements, of
    rows still staged or in the columns already (a read makes them columns)."""
    held, model = _staging(staged)(), []
    for op, *args in ops:
        if op == "append":
            held.append(args[0])
            model.append(dict(args[0]))
            continue
        if not model:
            with pytest.raises(IndexError):
                held[0]
            continue
        i = args[0] % len(model) - (len(model) if args[0] < 0 else 0)
        if op == "update":
            held.update(i, args[1])
            model[i].update(args[1])
        elif op == "replace":
            held.replace(i, args[1])
            model[i] = dict(args[1])
        else:
            assert same(held[i], model[i])
            assert all(same(held.value(i, f, "-"), model[i].get(f, "-")) for f in FIELDS)
    assert len(held) == len(model)
    assert all(same(a, b) for a, b in zip(held, model, strict=True))
    assert all(same(held[i], model[i]) for i in range(len(model)))
    assert all(same(a, b) for a, b in zip(held[1:], model[1:], strict=True))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["merge", "set", "del"]),
            st.sampled_from([f"job-{i}" for i in range(12)]),
            rows,
        ),
        max_size=60,
    )
)
def test_keyed_rows_behave_as_a_dict_of_dicts(ops: list[tuple[str, str, dict[str, Any]]]) -> None:
    """``merge`` is ``setdefault(key, {}).update``, assignment and deletion as a dict's, the
    keys in a dict's order, with rows of deleted keys dropped once they are most (a small
    threshold here, so that it happens)."""

    class Small(KeyedFactRows):
        COMPACT_AFTER = 2

    held, model = Small(), {}
    held._rows = _staging(3)()  # (some rows staged, some in the columns)
    for op, key, values_ in ops:
        if op == "merge":
            held.merge(key, values_)
            model.setdefault(key, {}).update(values_)
        elif op == "set":
            held[key] = values_
            model[key] = dict(values_)
        elif key in model:
            del held[key]
            del model[key]
        else:
            with pytest.raises(KeyError):
                del held[key]
    assert list(held) == list(model)
    assert all(same(held[k], model[k]) for k in model)
    assert all(same(held.value(k, f, "-"), model[k].get(f, "-")) for k in model for f in FIELDS)
    for f in FIELDS:
        assert same(held.values_of(f), {k: row[f] for k, row in model.items() if f in row})
    assert same(held.to_dict(), model) and same(dict(held.items()), model)
    assert ("job-99" in held) is False and held.value("job-99", "x") is None


def test_a_row_read_is_the_caller_s_own() -> None:
    held = KeyedFactRows({"a": {"n": 1}})
    row = held["a"]
    row["n"] = 2
    row["m"] = 3
    assert held["a"] == {"n": 1}


def test_rows_of_a_long_log_s_jobs_take_a_fraction_of_their_dicts() -> None:
    """20,000 jobs' facts (seven whole numbers each, most beyond the interpreter's cached
    small ints) and as many proofs (a shared status text, a float): as dicts, a dict and an int
    object a value; as rows, 8 bytes a value and the keys' index."""
    jobs = {
        f"{i:08x}-35bf-492d-89e9-c616612e7696": {
            "num_partitions": 10,
            "dispatch_line": 21 + 31 * i,
            "total_ms": 59015 + i,
            "synth_ms": 378940 + i,
            "gpu_ms": 29760 + i,
            "proof_len": 1920,
            "assembled_line": 304 + 31 * i,
        }
        for i in range(20_000)
    }
    proofs = [
        {
            "index": i + 1,
            "total": 20_000,
            "status": "COMPLETED",
            "wall_s": 59.1 + i / 10,
            "prove_ms": 29760 + i,
            "queue_ms": 12614 + i,
        }
        for i in range(20_000)
    ]
    text = json.dumps([jobs, proofs])

    def kept(make: Any) -> int:
        """What stays of the parse of ``text`` once ``make`` has taken what it keeps."""
        tracemalloc.start()
        held = make(json.loads(text))
        used = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del held
        return used

    as_dicts = kept(lambda d: d)

    def columns_of(d: Any) -> Any:
        rows = [KeyedFactRows(d[0]), FactRows(d[1])]
        for r in rows:
            list(r.columns())  # (every row in the columns: none staged)
        return rows

    as_rows = kept(columns_of)
    assert as_rows < as_dicts / 3


def test_run_info_holds_its_jobs_and_proofs_as_rows() -> None:
    info = RunInfo(
        jobs={"j1": {"num_partitions": 10, "dispatch_line": 3}},
        bench={"count": 1, "proofs": [{"index": 1, "status": "COMPLETED", "wall_s": 1.5}]},
    )
    assert isinstance(info.jobs, KeyedFactRows) and isinstance(info.bench["proofs"], FactRows)
    assert info.jobs == {"j1": {"num_partitions": 10, "dispatch_line": 3}}
    assert info.bench["proofs"] == [{"index": 1, "status": "COMPLETED", "wall_s": 1.5}]
    assert info.bench["proofs"] != [{"index": 2, "status": "COMPLETED", "wall_s": 1.5}]
    plain = info.to_dict()
    assert type(plain["jobs"]) is dict and type(plain["bench"]["proofs"]) is list
    assert plain["jobs"] == {"j1": {"num_partitions": 10, "dispatch_line": 3}}
    compact = info.to_dict(compact=True)
    assert compact["jobs"] is info.jobs and compact["bench"]["proofs"] is info.bench["proofs"]
    back = RunInfo.from_dict(json.loads(json.dumps(plain)))
    assert isinstance(back.jobs, KeyedFactRows) and back.to_dict() == plain
    for twin in (pickle.loads(pickle.dumps(info)), copy.deepcopy(info)):
        assert twin.to_dict() == plain
    with pytest.raises(TypeError, match="RunInfo.jobs"):
        RunInfo(jobs=["j1"])  # type: ignore[arg-type]


def _doc(jobs: KeyedFactRows, proofs: FactRows) -> dict[str, Any]:
    return {"info": {"bench": {"count": len(proofs), "proofs": proofs}, "jobs": jobs}, "n": 1}


def _report_writes_as_plain(doc: dict[str, Any], plain: dict[str, Any]) -> None:
    """The JSON report's writer (cleaning and neutralising) gives ``doc`` (with rows of facts)
    the text ``json.dumps`` gives ``plain`` (the same as plain dicts and lists)."""

    class Out:
        text = ""

        def write(self, s: str) -> None:
            Out.text += s

    write_neutralised_json(clean_value(doc), Out(), allow_nan=False)  # type: ignore[arg-type]
    want = json.dumps(
        neutralise_value(clean_value(plain)), indent=2, allow_nan=False, ensure_ascii=False
    )
    assert Out.text == want


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=12), rows, max_size=8), st.lists(rows, max_size=8))
def test_rows_write_into_json_as_their_dicts(jobs: dict[str, Any], proofs: list[Any]) -> None:
    """The report's writer (``jsontext``, cleaning and neutralising as the JSON report does)
    gives the text of the plain dicts and lists, whatever the values (floats to clean, texts to
    neutralise, keys to neutralise)."""
    doc = _doc(KeyedFactRows(jobs), FactRows(proofs))
    plain = _doc(jobs, proofs)  # type: ignore[arg-type]
    assert indented(doc, default=str) == json.dumps(
        plain, indent=2, default=str, ensure_ascii=False
    )
    _report_writes_as_plain(doc, plain)


def test_plain_rows_are_given_back_themselves() -> None:
    """``clean_value`` and ``neutralise_value`` give rows back themselves when nothing in them
    changes (the report's run facts are not copied), and as cleaned rows otherwise."""
    jobs = KeyedFactRows({"j": {"n": 10, "status": "ok"}})
    proofs = FactRows([{"wall_s": 59.1, "index": 1}])
    assert clean_value(jobs) is jobs and clean_value(proofs) is proofs
    assert neutralise_value(jobs) is jobs and neutralise_value(proofs) is proofs
    rough = FactRows([{"wall_s": 59.12345}, {"wall_s": math.nan}, {"x": 1}])
    assert list(clean_value(rough)) == [{"wall_s": 59.123}, {"wall_s": None}, {"x": 1}]
    loud = KeyedFactRows({"::error::x": {"m": "a::b"}})
    assert neutralise_value(loud) == neutralise_value(plain_rows(loud))
    assert "::" not in json.dumps(neutralise_value(loud))


# Rows of a few shapes, many of each (the writer makes a shape's rows' texts together): fields
# whose names hold what a format string or JSON text treats specially, columns of one type
# (the writer's bulk cases: integers, floats with NaN and infinities, texts) and of several.
_SHAPED_FIELDS = ["n", "{x}", 'a"b', "é\\", "ms"]
_columns = st.sampled_from(
    [
        st.integers(-(1 << 63), (1 << 63) - 1),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(alphabet=st.sampled_from(list('{}"\\\n:#[aé\x7f')), max_size=4),
        values,
    ]
)


@st.composite
def _shaped_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    shapes = draw(
        st.lists(
            st.lists(st.sampled_from(_SHAPED_FIELDS), unique=True, max_size=4),
            min_size=1,
            max_size=3,
        )
    )
    kinds = {f: draw(_columns) for f in _SHAPED_FIELDS}
    picks = draw(st.lists(st.integers(0, len(shapes) - 1), min_size=1, max_size=30))
    return [{f: draw(kinds[f]) for f in shapes[k]} for k in picks]


@settings(max_examples=200, deadline=None)
@given(
    _shaped_rows(),
    st.sets(st.integers(0, 29)),
    st.sampled_from([0, 2, 4]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([1, 4, jsontext.ROWS_AT_ONCE]),
)
def test_rows_of_few_shapes_write_as_their_dicts(
    proofs: list[dict[str, Any]],
    gone: set[int],
    indent: int,
    ascii_only: bool,
    nan: bool,
    at_once: int,
) -> None:
    """Many rows of each shape, as rows and as keyed rows some of whose keys were deleted (their
    rows still held), written a few rows at a time or all at once: the text of ``json.dumps``
    of the plain dicts, and its refusal of NaN where it refuses it; cleaned and neutralised as
    the JSON report writes them."""
    held, jsontext.ROWS_AT_ONCE = jsontext.ROWS_AT_ONCE, at_once
    try:
        _write_rows_as_their_dicts(proofs, gone, indent, ascii_only, nan)
    finally:
        jsontext.ROWS_AT_ONCE = held


def _write_rows_as_their_dicts(
    proofs: list[dict[str, Any]], gone: set[int], indent: int, ascii_only: bool, nan: bool
) -> None:
    jobs = KeyedFactRows({f"j{i}": row for i, row in enumerate(proofs)})
    for i in gone & set(range(len(proofs))):
        del jobs[f"j{i}"]
    doc = _doc(jobs, FactRows(proofs))
    plain = _doc(jobs.to_dict(), proofs)  # type: ignore[arg-type]
    options = {"indent": indent, "ensure_ascii": ascii_only, "allow_nan": nan}
    try:
        want = json.dumps(plain, **options)  # type: ignore[arg-type]
    except ValueError:
        with pytest.raises(ValueError):
            indented(doc, **options)
    else:
        assert indented(doc, **options) == want
    _report_writes_as_plain(doc, plain)
