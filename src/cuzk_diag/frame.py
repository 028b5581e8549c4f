"""Partition records -> one pyarrow Table / pandas DataFrame with the declared schema."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd
import pyarrow as pa

from cuzk_diag.records import PARTITION_COLUMNS, PARTITION_SCHEMA

_INT_COLS = [name for name, typ in PARTITION_COLUMNS if pa.types.is_integer(typ)]
_FLOAT_COLS = [name for name, typ in PARTITION_COLUMNS if pa.types.is_floating(typ)]
_STR_COLS = [name for name, typ in PARTITION_COLUMNS if pa.types.is_string(typ)]


def _coerce(rec: dict[str, Any]) -> dict[str, Any]:
    """Make each value fit its column; a value that does not is moved to ``extra``."""
    bad: dict[str, Any] = {}
    out = dict(rec)
    for k in _INT_COLS:
        v = out.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            if isinstance(v, float) and v.is_integer():
                out[k] = int(v)
            else:
                bad[k] = v
                out[k] = None
    for k in _FLOAT_COLS:
        v = out.get(k)
        if v is not None and not isinstance(v, (int, float)):
            bad[k] = v
            out[k] = None
    for k in _STR_COLS:
        v = out.get(k)
        if v is not None and not isinstance(v, str):
            out[k] = str(v)
    if bad:
        extra = json.loads(out["extra"]) if out.get("extra") else {}
        extra.update({f"invalid_{k}": v for k, v in bad.items()})
        out["extra"] = json.dumps(extra, sort_keys=True)
    return out


def records_to_table(records: Iterable[dict[str, Any]]) -> pa.Table:
    """Build the partition table; every column of ``PARTITION_SCHEMA``, in order."""
    rows = [_coerce(r) for r in records]
    return pa.Table.from_pylist(rows, schema=PARTITION_SCHEMA)


def _types_mapper(t: pa.DataType) -> Any:
    if pa.types.is_integer(t):
        return pd.Int64Dtype()
    if pa.types.is_floating(t):
        return pd.Float64Dtype()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pd.StringDtype()
    return None


def table_to_frame(table: pa.Table, *, release: bool = False) -> pd.DataFrame:
    """pandas view with nullable dtypes (Int64, Float64, string) so missing stays missing.

    ``release``: the table is used up (unusable afterwards), each column's memory freed once
    it is converted, so the frame is not built beside a whole copy of the table."""
    return table.to_pandas(types_mapper=_types_mapper, self_destruct=release, split_blocks=release)
