"""``Event``, one parsed log line: a value the parse hands the assembly (``cuzk_diag.event``).

Compiled, it is a C type; these tests hold both builds to the same behaviour (``test_compiled``
runs them against the compiled build too).
"""

from __future__ import annotations

import copy
import pickle

import pytest

from cuzk_diag.event import Event
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
