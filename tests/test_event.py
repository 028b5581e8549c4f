"""``Event``, one parsed log line: a value the parse hands the assembly (``cuzk_diag.event``).

Compiled, it is a C type; these tests hold both builds to the same behaviour (``test_compiled``
runs them against the compiled build too).
"""

from __future__ import annotations

import copy
import pickle
import sys

import pytest

from cuzk_diag.event import Columns, Event
from cuzk_diag.ingest import parse_text
from cuzk_diag.records import Family


def _event(**change: object) -> Event:
    values = {
        "line": 7,
        "source": 1,
        "family": Family.TIMING,
        "kind": "split_vectors",
        "fields": {"split_vectors_ms": 3},
        "malformed": False,
    }
    values.update(change)
    return Event(**values)  # type: ignore[arg-type]


def test_an_event_is_compared_by_its_values() -> None:
    ev = _event()
    assert ev == _event()
    assert ev != _event(line=8)
    assert ev != _event(fields={"split_vectors_ms": 4})
    assert ev != _event(malformed=True)
    assert ev != (7, 1, Family.TIMING, "split_vectors", {"split_vectors_ms": 3}, False)
    with pytest.raises(TypeError):
        hash(ev)  # (its fields are a dict)


def test_an_event_reads_as_the_tuple_of_its_fields() -> None:
    ev = _event()
    line, source, family, kind, fields, malformed = ev
    assert (
        (line, source, family, kind, fields, malformed)
        == tuple(ev)
        == tuple(ev[i] for i in range(6))
    )
    assert ev[-1] is False and len(ev) == 6
    assert Event(1, 0, Family.BLANK, "blank", {}).malformed is False  # (the default)
    assert repr(ev) == (
        "Event(line=7, source=1, family=<Family.TIMING: 'timing'>, kind='split_vectors', "
        "fields={'split_vectors_ms': 3}, malformed=False)"
    )


def test_an_event_survives_pickling_and_copies() -> None:
    """Events cross processes (``--jobs``) pickled, and live previews deep-copy them."""
    ev = _event(malformed=True)
    for protocol in (2, 5):
        back = pickle.loads(pickle.dumps(ev, protocol=protocol))
        assert back == ev and type(back) is Event
    deep = copy.deepcopy(ev)
    assert deep == ev and deep.fields is not ev.fields


def test_the_parse_makes_events_of_every_family() -> None:
    text = (
        "CUZK_TIMING: split_vectors_ms=3 setup_to_split_ms=5\n"
        "TIMELINE,5,GPU_START,j1,partition=3,worker=0\n"
        "2026-03-13T15:14:08.761Z  INFO cuzk_core::engine: something\n"
        "\n"
    )
    events, _ = parse_text(text)
    assert all(type(e) is Event for e in events)
    assert [e.family for e in events][:2] == [Family.TIMING, Family.TIMELINE]
    assert events[0].fields == {"split_vectors_ms": 3, "setup_to_split_ms": 5}


def _from_columns(row: int = 1) -> tuple[Event, Columns]:
    """An event made from columns as the parse makes those of TIMELINE and clock lines."""
    names = ["offset_ms", "job_id", "partition", "worker"]
    cols = Columns([sys.intern(n) for n in names], [[5, 6, 7], ["a", "b", "c"], 3, [0, 1, 2]])
    ev = Event(12, 0, Family.TIMELINE, "GPU_START", {})
    ev._fields, ev._cols, ev._row = None, cols, row  # (as ``columnar._made_events`` sets them)
    return ev, cols


def test_an_event_made_from_columns_reads_each_field_without_its_dict() -> None:
    want = {"offset_ms": 6, "job_id": "b", "partition": 3, "worker": 1}
    ev, cols = _from_columns()
    # Keys as the assembly asks (interned literals), as texts made at run time, and absent ones
    # (asked twice: the second answer comes from the columns' note of missing keys).
    made = "".join(["parti", "tion"])
    asked = [*want, made, "snap_partition", "kind", "snap_partition", "".join(["ki", "nd"])]
    for key in asked:
        assert ev.get(key) == want.get(key), key
        assert ev.has(key) is (key in want), key
    assert ev._fields is None and ev._cols is cols  # (no dict made yet)
    assert cols.absent == ["snap_partition", "kind"]  # (a made text equal to a name: found)
    assert ev.fields == want and list(ev.fields) == list(want)  # (the names' order)
    assert ev._cols is None  # (the columns are not held once the dict is made)
    assert ev.get("worker") == 1 and ev.has("offset_ms") and not ev.has("kind")
    assert ev.field_dict() is ev.fields


def test_an_event_copies_its_fields_the_same_whether_made_from_columns_or_a_dict() -> None:
    lazy, _ = _from_columns()
    eager = Event(12, 0, Family.TIMELINE, "GPU_START", dict(_from_columns()[0].fields))
    for ren in (None, {"job_id": "job", "worker": "w"}):
        for drop in (frozenset(), frozenset({"partition", "absent"})):
            into_lazy: dict[str, object] = {"x": 1, "job_id": "old"}
            into_eager = dict(into_lazy)
            lazy.copy_fields(into_lazy, drop, ren)
            eager.copy_fields(into_eager, drop, ren)
            assert list(into_lazy.items()) == list(into_eager.items())
    assert lazy._fields is None  # (copied from the columns)


def test_an_event_made_from_columns_equals_pickles_and_copies_as_one_made_with_its_dict() -> None:
    ev, _ = _from_columns(row=2)
    eager = Event(
        12,
        0,
        Family.TIMELINE,
        "GPU_START",
        {"offset_ms": 7, "job_id": "c", "partition": 3, "worker": 2},
    )
    assert _from_columns(row=2)[0] == eager and repr(_from_columns(row=2)[0]) == repr(eager)
    for protocol in (2, 5):
        back = pickle.loads(pickle.dumps(_from_columns(row=2)[0], protocol=protocol))
        assert back == eager and back._cols is None
    assert copy.deepcopy(ev) == eager
    assert _from_columns(row=0)[0] != eager
