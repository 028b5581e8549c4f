"""Write and read the fleet dataset; rebuild only the units whose files changed.

Layout (docs/fleet.md)::

    DATASET/partitions/host=H/date=D/<unit>.parquet   one row per GPU call (Hive-partitioned)
    DATASET/runs/<unit>.parquet                        one row per run
    DATASET/findings/<unit>.parquet                    one row per finding
    DATASET/_manifest.json                             what each unit was built from

Each unit's files are written under a temporary name and renamed into place, and the manifest
is rewritten after every unit, so an interrupted build leaves a readable dataset and the next
build resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cuzk_diag.errors import InputError
from cuzk_diag.fleet.discover import Unit
from cuzk_diag.fleet.schema import FLEET_SCHEMA_VERSION, SCHEMA_KEY
from cuzk_diag.fleet.task import UnitResult

MANIFEST = "_manifest.json"
TABLES = ("partitions", "runs", "findings")


@dataclass(slots=True)
class BuildSummary:
    """What a build did: units read, skipped as unchanged, failed (with their messages)."""

    built: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # unit group -> error message
    bytes_read: int = 0
    rows: int = 0


class Manifest:
    """``_manifest.json``: per unit its file keys and the files it wrote."""

    def __init__(self, root: Path) -> None:
        self.path = root / MANIFEST
        self.units: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(f"{self.path}: unreadable fleet manifest ({exc})") from None
            if data.get("schema_version") != FLEET_SCHEMA_VERSION:
                raise InputError(
                    f"{self.path}: dataset of schema version {data.get('schema_version')}, "
                    f"this cuzk-diag writes {FLEET_SCHEMA_VERSION}; build into a new directory"
                )
            self.units = data.get("units", {})

    def unchanged(self, unit: Unit, key: Any) -> bool:
        """Was ``unit`` built, without error, from files of this ``key``?"""
        entry = self.units.get(unit.group) or {}
        return bool(entry) and entry.get("key") == key and not entry.get("error")

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        payload = {"schema_version": FLEET_SCHEMA_VERSION, "units": self.units}
        tmp.write_text(json.dumps(payload, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


def _jsonable(key: Any) -> Any:
    return json.loads(json.dumps(key))


Runner = Callable[[Sequence[Unit]], Iterator[tuple[Unit, UnitResult]]]


def build(
    units: Sequence[Unit],
    out: str | Path,
    runner: Runner,
    *,
    on_unit: Callable[[Unit, UnitResult | None], None] | None = None,
) -> BuildSummary:
    """Build or update the dataset at ``out``; ``runner`` maps units to results (any order)."""
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise InputError(f"{root}: exists and is not a directory")
    root.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(root)
    summary = BuildSummary()
    todo: list[Unit] = []
    keys: dict[str, Any] = {}  # each file's key is computed once: it reads 2 MiB of the file
    for unit in units:
        keys[unit.group] = _jsonable(unit.key())
        if manifest.unchanged(unit, keys[unit.group]):
            summary.unchanged.append(unit.group)
            if on_unit:
                on_unit(unit, None)
        else:
            todo.append(unit)
    for unit, result in runner(todo):
        _remove_outputs(root, manifest.units.get(unit.group, {}).get("outputs", []))
        entry: dict[str, Any] = {"key": keys[unit.group], "files": unit.paths}
        if result.error is not None:
            entry["error"] = result.error
            summary.failed[unit.group] = result.error
        else:
            entry["outputs"] = write_unit(root, result)
            entry["host"] = result.host
            summary.built.append(unit.group)
            summary.rows += result.partitions.num_rows if result.partitions is not None else 0
        summary.bytes_read += result.bytes_read
        manifest.units[unit.group] = entry
        manifest.save()
        if on_unit:
            on_unit(unit, result)
    return summary


def write_unit(root: Path, result: UnitResult) -> list[str]:
    """Write one unit's tables; returns the paths written, relative to ``root``."""
    written: list[str] = []
    meta = {SCHEMA_KEY: str(FLEET_SCHEMA_VERSION).encode()}
    name = f"{result.unit_id}.parquet"
    parts = result.partitions
    if parts is not None and parts.num_rows:
        dates = parts.column("date")
        for date in sorted(set(dates.to_pylist())):
            rows = parts.filter(pc.equal(dates, date)).drop_columns(["date"])
            rel = f"partitions/host={result.host}/date={date}/{name}"
            _write(root / rel, rows, meta)
            written.append(rel)
    for table_name, table in (("runs", result.runs), ("findings", result.findings)):
        if table is not None:
            rel = f"{table_name}/{name}"
            _write(root / rel, table, meta)
            written.append(rel)
    return written


def _write(path: Path, table: pa.Table, meta: dict[bytes, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _remove_outputs(root: Path, outputs: Sequence[str]) -> None:
    for rel in outputs:
        path = root / rel
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        parent = path.parent
        while parent != root and parent.exists() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def read_table(root: str | Path, name: str) -> pa.Table:
    """One table of a dataset (``partitions``, ``runs`` or ``findings``) as Arrow."""
    import pyarrow.dataset as ds

    from cuzk_diag.fleet.schema import FINDING_SCHEMA, RUN_SCHEMA, partition_schema

    base = Path(root) / name
    if not (Path(root) / MANIFEST).exists():
        raise InputError(f"{root}: not a fleet dataset (no {MANIFEST}); build it with `fleet`")
    if name == "partitions":
        schema = partition_schema().remove(partition_schema().get_field_index("date"))
        schema = schema.append(pa.field("host", pa.string())).append(pa.field("date", pa.string()))
        if not base.exists():
            return schema.empty_table()
        dataset = ds.dataset(base, schema=schema, format="parquet", partitioning="hive")
        return dataset.to_table()
    schema = RUN_SCHEMA if name == "runs" else FINDING_SCHEMA
    if not base.exists():
        return schema.empty_table()
    return ds.dataset(base, schema=schema, format="parquet").to_table()


def clear(root: str | Path) -> None:
    """Remove a dataset's tables and manifest (``fleet --rebuild``)."""
    r = Path(root)
    for name in TABLES:
        shutil.rmtree(r / name, ignore_errors=True)
    (r / MANIFEST).unlink(missing_ok=True)
