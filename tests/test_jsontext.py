"""``jsontext.encoder`` writes the text ``json.dumps`` writes, for each way the package uses it."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.jsontext import chunk_encoder, encoder, indented

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # quotes, backslashes, control and non-ASCII characters
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
_objects = st.dictionaries(st.text(), _values, max_size=8)


@settings(max_examples=300, deadline=None)
@given(_objects)
def test_encoders_write_what_json_dumps_writes(obj: dict[str, object]) -> None:
    assert encoder()(obj) == json.dumps(obj, ensure_ascii=False)
    assert encoder(separators=(",", ":"), allow_nan=False)(obj) == json.dumps(
        obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )
    assert encoder(default=str)(obj) == json.dumps(obj, ensure_ascii=False, default=str)
    pieces = chunk_encoder(separators=(",", ":"), default=str)(obj, 0)
    assert "".join(pieces) == json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def test_encoders_write_the_same_text_without_the_c_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Python built without the ``_json`` accelerator: the pieces are the standard
    library's text, and the refusals are its."""
    obj = {"a": 'é\n"', "b": [1, 2.5, None, True], "c": {"d": dt.date(2026, 3, 13)}}
    fast = chunk_encoder(separators=(",", ":"), default=str)(obj, 0)
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    slow = chunk_encoder(separators=(",", ":"), default=str)(obj, 0)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    assert "".join(slow) == "".join(fast) == text
    assert encoder()(obj | {"c": None}) == json.dumps(obj | {"c": None}, ensure_ascii=False)
    with pytest.raises(ValueError):
        encoder(allow_nan=False)({"x": math.nan})


def test_encoders_refuse_and_convert_as_json_dumps_does() -> None:
    strict = encoder(separators=(",", ":"), allow_nan=False)
    for bad in ({"x": math.nan}, {"x": [math.inf]}):
        with pytest.raises(ValueError):
            strict(bad)
        with pytest.raises(ValueError):
            json.dumps(bad, allow_nan=False)
    assert encoder()({"x": math.nan}) == json.dumps({"x": math.nan}) == '{"x": NaN}'
    when = {"t": dt.datetime(2026, 3, 13, 1, 2, 3, tzinfo=dt.UTC), "s": {1, 2} - {1, 2}}
    assert encoder(default=str)(when) == json.dumps(when, ensure_ascii=False, default=str)
    with pytest.raises(TypeError):
        encoder()(when)
    # The encoder keeps no state between objects: a failed one leaves the next right.
    assert (
        strict({"a": 'é\n"', "b": [1, 2.5, None, True]}) == '{"a":"é\\n\\"","b":[1,2.5,null,true]}'
    )


# -- indented documents ------------------------------------------------------------------------


class _Dict(dict):  # type: ignore[type-arg]
    """A dict of another type: written as a dict, never as a run of scalars."""


class _Level(enum.IntEnum):
    LOW = 1


_keys = st.text() | st.integers(-5, 5) | st.none() | st.booleans() | st.floats(-2, 2)
_leaves = _scalars | st.sampled_from([_Level.LOW, math.inf, -0.0])
_documents = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(_keys, inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=3).map(_Dict)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_documents, st.sampled_from([0, 2, 4]), st.booleans())
def test_indented_documents_are_what_json_dumps_writes(
    doc: object, indent: int, ascii_only: bool
) -> None:
    """Empty and nested containers, tuples, dict subclasses, keys of every type, enums, ±inf."""
    assert indented(doc, indent=indent, ensure_ascii=ascii_only) == json.dumps(
        doc, indent=indent, ensure_ascii=ascii_only
    )


def test_indented_documents_refuse_and_convert_as_json_dumps_does() -> None:
    for bad in ({"x": [1, math.nan]}, [{"a": {"b": math.inf}}], math.nan):
        with pytest.raises(ValueError):
            indented(bad, allow_nan=False)
        with pytest.raises(ValueError):
            json.dumps(bad, indent=2, allow_nan=False)
    when = {"jobs": {"a": {"t": dt.datetime(2026, 3, 13, tzinfo=dt.UTC)}}, "n": [{1, 2}]}
    assert indented(when, default=str) == json.dumps(
        when, indent=2, ensure_ascii=False, default=str
    )
    with pytest.raises(TypeError):
        indented(when)
    report = {"info": {"jobs": {f"job-{i}": {"gpu_ms": i, "ok": True} for i in range(50)}}}
    assert indented(report, allow_nan=False) == json.dumps(report, indent=2, allow_nan=False)


# A run of records: a list, tuple or dict of flat dicts (a report's proofs and jobs), with texts
# of the characters a writer's separators and braces are made of: braces, commas, colons,
# quotes, backslashes, newlines.
_record_text = st.text(alphabet=st.sampled_from(list('{}[],: "\\\n\tab1é')), max_size=6)
_record_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _record_text
)
_record = st.dictionaries(_record_text | st.integers(-3, 3), _record_scalar, min_size=0, max_size=5)
_records = (
    st.lists(_record, max_size=6)
    | st.lists(_record, max_size=6).map(tuple)
    | st.dictionaries(_record_text | st.integers(-3, 3) | st.none(), _record, max_size=6)
)


@settings(max_examples=500, deadline=None)
@given(_records, st.sampled_from([0, 1, 2, 4]), st.booleans(), st.integers(0, 3))
def test_runs_of_records_are_what_json_dumps_writes(
    run: object, indent: int, ascii_only: bool, depth: int
) -> None:
    """Lists, tuples and dicts of flat dicts (empty ones among them), alone and nested as deep
    as a report nests its jobs."""
    doc: object = run
    for level in range(depth):
        doc = {f"level{level}": doc, "n": level}
    assert indented(doc, indent=indent, ensure_ascii=ascii_only) == json.dumps(
        doc, indent=indent, ensure_ascii=ascii_only
    )
