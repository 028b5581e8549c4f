"""JSON text of many small objects, one at a time, at the C encoder's speed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def encoder(
    *,
    separators: tuple[str, str] | None = None,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
) -> Callable[[object], str]:
    """``json.JSONEncoder(ensure_ascii=False, ...).encode``, with the C encoder that call makes
    every time made once: half the cost of a small object, the same text.

    Without a cycle check: for objects that hold no reference cycles (rows, records, the
    ``to_dict`` of findings), as everything this package writes."""
    enc = json.JSONEncoder(
        ensure_ascii=False, separators=separators, allow_nan=allow_nan, default=default
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python built without the _json accelerator
        return enc.encode
    c_encode = make(
        None,  # no cycle check (see above)
        enc.default,
        json.encoder.encode_basestring,
        None,
        enc.key_separator,
        enc.item_separator,
        enc.sort_keys,
        enc.skipkeys,
        enc.allow_nan,
    )
    return lambda obj: "".join(c_encode(obj, 0))
