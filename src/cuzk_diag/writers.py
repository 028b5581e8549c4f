"""Write Arrow record batches as Parquet, CSV or JSON Lines, incrementally."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from cuzk_diag.errors import InputError, OutputError
from cuzk_diag.ingest.parse.classify import utf8_bytes
from cuzk_diag.ingest.parse.scan import join_rows
from cuzk_diag.jsontext import encoder
from cuzk_diag.records import WALL_CLOCK_MAX_MS, WALL_CLOCK_MIN_MS
from cuzk_diag.sinks import Sink, StreamEnd

FORMATS = ("parquet", "csv", "jsonl")
#: A JSON value as JSON Lines rows hold it (one JSON has no form for is written as its text).
_json_value = encoder(default=str)
#: Rows made JSON Lines text at once (the text and its pieces are held at once: a chunk's line
#: table as one took 56 MiB more at its peak).
JSONL_ROWS = 4096
#: The characters the JSON encoder escapes in a text besides quotes and backslashes
#: (``json.encoder.encode_basestring``: some by a letter, the others by their number).
_JSON_CONTROL_RE2 = r"[\x00-\x1f]"
_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}


def format_for(path: str, explicit: str | None) -> str:
    """The output format: ``explicit`` if given, else from the file suffix."""
    if explicit:
        return explicit
    ext = os.path.splitext(path)[1].lower()
    fmt = _SUFFIXES.get(ext)
    if fmt is None:
        raise InputError(
            f"{path}: cannot tell the format from the suffix {ext or '(none)'!r}; "
            "use .parquet, .csv or .jsonl, or --format"
        )
    return fmt


#: Text form of timestamp columns in CSV and JSON Lines: ISO 8601 UTC, milliseconds.
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # %S of a ms timestamp carries the milliseconds


def _text_schema(schema: pa.Schema) -> pa.Schema:
    """The schema as text formats write it: timestamps become ISO 8601 strings."""
    return pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_timestamp(f.type) else f for f in schema]
    )


def timestamps_as_text(batch: pa.Table) -> pa.Table:
    """Timestamp columns as ISO 8601 UTC text, as CSV and JSON Lines hold them."""
    for i, f in enumerate(batch.schema):
        if pa.types.is_timestamp(f.type):
            batch = batch.set_column(i, f.name, timestamp_text(batch.column(i)))
    return batch


#: The digits of a second's fraction that ``%S`` writes, by a timestamp's unit.
_FRACTION_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}
#: The first and last seconds since the epoch of the years ``%Y`` writes in four digits.
_FIRST_SECOND, _LAST_SECOND = WALL_CLOCK_MIN_MS // 1000, WALL_CLOCK_MAX_MS // 1000


def timestamp_text(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The text ``pc.strftime(col, format=TIMESTAMP_FORMAT)`` makes of a timestamp column
    (``2026-03-13T20:41:09.364Z`` for milliseconds), written by numpy a character column at a
    time from each value's day (the civil calendar from the days since the epoch) and time of
    day: Arrow's ``strftime`` formats value by value, 1.2 us each. A column of a time zone
    other than UTC, with a value outside the years 1-9999, or too long for one string array's
    offsets, is Arrow's to write."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    typ = col.type
    digits = _FRACTION_DIGITS[typ.unit]
    width = 19 + (digits + 1 if digits else 0) + 1  # (the date and time, the fraction, "Z")
    if typ.tz not in (None, "UTC") or not len(col) or (len(col) + 1) * width >= 2**31:
        return pc.strftime(col, format=TIMESTAMP_FORMAT)
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    ticks = pc.fill_null(col.cast(pa.int64()), 0).to_numpy()
    secs, frac = np.divmod(ticks, 10**digits)
    if valid.any() and (secs[valid].min() < _FIRST_SECOND or secs[valid].max() > _LAST_SECOND):
        return pc.strftime(col, format=TIMESTAMP_FORMAT)
    days, sod = np.divmod(np.where(valid, secs, 0), 86_400)
    year, month, day = _civil(days)
    parts: list[tuple[np.ndarray, int]] = [(year, 4), (month, 2), (day, 2)]
    parts += [(sod // 3600, 2), (sod // 60 % 60, 2), (sod % 60, 2)]
    seps = "--T::" + ("." if digits else "")
    if digits:
        parts.append((frac, digits))
    text = np.empty((len(col), width), dtype=np.uint8)
    at = 0
    for k, (values, n) in enumerate(parts):
        for d in range(n):
            text[:, at + d] = values // 10 ** (n - 1 - d) % 10 + 48
        at += n
        if k < len(seps):
            text[:, at] = ord(seps[k])
            at += 1
    text[:, at] = ord("Z")
    offsets = np.arange(0, width * (len(col) + 1), width, dtype=np.int32)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.StringArray.from_buffers(
        len(col), pa.py_buffer(offsets), pa.py_buffer(text), bitmap, int((~valid).sum())
    )


def _civil(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Year, month and day of the proleptic Gregorian calendar of each day since 1970-01-01
    (H. Hinnant's ``civil_from_days``, exact for any day)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097  # day of the 400-year era, 0-146096
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)  # day of the year from March 1st
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    return year, month, day


def jsonl_lines(table: pa.Table) -> pa.Array:
    """Each row of ``table`` as a line of JSON Lines, newline included: the text the JSON
    encoder makes of the row as a dict (``{"name": value, ...}``, the columns in order, a value
    JSON has no form for as its text), made a column at a time by Arrow's kernels and the rows
    put together by one loop (``scan.join_rows``).

    Whole numbers are Arrow's decimal text, booleans and nulls their words, texts quoted with
    their quotes and backslashes escaped (those that hold a control character, few, are encoded
    one by one); the other types (floats, whose shortest text is Python's) are encoded value by
    value. (Each row's dict encoded on its own took 23 us a partition record.)"""
    pieces: list[pa.Array | str] = []
    for i, field in enumerate(table.schema):
        pieces.append(("{" if i == 0 else ", ") + _json_value(field.name) + ": ")
        pieces.append(_value_texts(table.column(i).combine_chunks()))
    if not pieces:
        return pa.array(["{}\n"] * table.num_rows, pa.string())
    pieces.append("}\n")
    return join_rows(pieces, table.num_rows)


def _value_texts(col: pa.Array) -> pa.Array:
    """The JSON text of each value of ``col`` (no nulls: ``null``)."""
    typ = col.type
    if pa.types.is_integer(typ):
        text = pc.cast(col, pa.string())
    elif pa.types.is_boolean(typ):
        text = pc.if_else(col, "true", "false")
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        # (Each test first over the column's bytes at once: a kernel that finds nothing to
        # replace still costs as much as one that does.)
        data = np.frombuffer(utf8_bytes(col), dtype=np.uint8)
        text = col
        if (data == 0x5C).any():  # a backslash
            text = pc.replace_substring(text, "\\", "\\\\")
        if (data == 0x22).any():  # a quote
            text = pc.replace_substring(text, '"', '\\"')
        text = join_rows(['"', text, '"'], len(col))
        if (data < 0x20).any():
            control = pc.fill_null(pc.match_substring_regex(col, _JSON_CONTROL_RE2), False)
            values = pc.filter(col, control).to_pylist()
            text = pc.replace_with_mask(
                text, control, pa.array([_json_value(v) for v in values], text.type)
            )
    else:
        return pa.array([_json_value(v) for v in col.to_pylist()], pa.string())
    return pc.fill_null(text, "null")


class _Background:
    """Parquet tables written by a thread of their own, in order, while the caller makes the
    next ones (Arrow encodes and compresses a table without the interpreter's lock). At most
    ``AHEAD`` of the tables the caller makes wait; tables it held already (``put(held=True)``)
    wait without that bound. An error of the writer is raised at the next ``put`` or at
    ``finish``."""

    AHEAD = 2

    def __init__(self, writer: pq.ParquetWriter) -> None:
        self.writer = writer
        self.error: BaseException | None = None
        self.tables: queue.Queue[tuple[pa.Table, bool] | None] = queue.Queue()
        self.room = threading.Semaphore(self.AHEAD)  # (for the tables put without ``held``)
        self.thread = threading.Thread(target=self._run, name="cuzk-diag-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (item := self.tables.get()) is not None:
            table, bounded = item
            if self.error is None:
                try:
                    self.writer.write_table(table)
                except BaseException as exc:  # raised in the caller's thread
                    self.error = exc
            del table, item
            if bounded:
                self.room.release()

    def put(self, table: pa.Table, *, held: bool = False) -> None:
        self._raise()
        if not held:
            self.room.acquire()
        self.tables.put((table, not held))

    def finish(self) -> None:
        """Every table written (then the writer is the caller's alone again)."""
        if self.thread.is_alive():
            self.tables.put(None)
            self.thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error


class TableWriter:
    """Streams batches of one schema to a file (or stdout for csv/jsonl with path ``-``).
    Parquet is encoded and written on a thread of its own (``_Background``), its columns
    dictionary-encoded, or with ``dictionary`` only those named (the others plain)."""

    def __init__(
        self,
        path: str,
        fmt: str,
        schema: pa.Schema,
        metadata: dict[bytes, bytes] | None = None,
        *,
        dictionary: Sequence[str] | None = None,
    ) -> None:
        self.path = path
        self.fmt = fmt
        self.schema = schema.with_metadata(metadata) if metadata else schema
        self.rows = 0
        self._pq: pq.ParquetWriter | None = None
        self._bg: _Background | None = None
        self._csv: pacsv.CSVWriter | None = None
        self._fh: IO[bytes] | None = None
        if fmt == "parquet":
            if path == "-":
                raise InputError("Parquet output needs a file: give -o FILE")
            try:
                self._pq = pq.ParquetWriter(
                    path,
                    self.schema,
                    compression="zstd",
                    use_dictionary=True if dictionary is None else list(dictionary),
                )
            except OSError as exc:
                raise cannot_write(path, exc) from None
            self._bg = _Background(self._pq)
        elif fmt == "csv":
            self._fh = _open(path)
            self._csv = pacsv.CSVWriter(self._fh, _text_schema(schema))
        elif fmt == "jsonl":
            self._fh = _open(path)
        else:
            raise InputError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")

    @property
    def threads(self) -> int:
        """Threads of its own that keep a CPU busy while the caller makes the next batches:
        Parquet's encoder (``_Background``), none for the text formats."""
        return 0 if self._bg is None else 1

    def write(self, batch: pa.RecordBatch | pa.Table, *, held: bool = False) -> None:
        """Write a batch (a failed write, a full disk say, is an ``OutputError``). ``held``:
        the caller holds the rows after it already (tables another process made): to Parquet,
        it goes on without waiting for the writer's thread (``_Background``)."""
        with self._writing():
            self._write(batch, held)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        try:
            yield
        except BrokenPipeError:
            raise  # (stdout's reader went away: the CLI ends quietly)
        except OSError as exc:
            raise cannot_write(self.path, exc) from None

    def _write(self, batch: pa.RecordBatch | pa.Table, held: bool = False) -> None:
        self.rows += batch.num_rows
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        if self._bg is not None:
            # (A table of the schema already, as the partition export's are, is not cast
            # again: 0.5 ms a batch of 4096 rows for its 73 columns.)
            if not batch.schema.equals(self.schema):
                batch = batch.cast(self.schema)
            self._bg.put(batch, held=held)
            return
        batch = timestamps_as_text(batch)
        if self._csv is not None:
            self._csv.write(batch)
        else:
            assert self._fh is not None
            for start in range(0, batch.num_rows, JSONL_ROWS):
                self._fh.write(utf8_bytes(jsonl_lines(batch.slice(start, JSONL_ROWS))))

    def add_metadata(self, metadata: dict[bytes, bytes]) -> None:
        """Key-value metadata known only at the end (Parquet only; text formats have none)."""
        if self._pq is not None:
            assert self._bg is not None
            with self._writing():
                self._bg.finish()  # (the tables before it written: the writer is this thread's)
            self._pq.add_key_value_metadata({k.decode(): v.decode() for k, v in metadata.items()})

    def close(self) -> None:
        """Write what is left and close the file; if that fails, the file is removed (as
        ``abandon`` does) and the error raised."""
        try:
            self._close()
        except (OSError, OutputError):
            self._remove()
            raise

    def _close(self) -> None:
        with self._writing():
            if self._pq is not None:
                assert self._bg is not None
                try:
                    self._bg.finish()
                finally:
                    self._pq.close()
            if self._csv is not None:
                self._csv.close()
            if self._fh is not None and self.path != "-":
                self._fh.close()
            elif self._fh is not None:
                self._fh.flush()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()

    def abandon(self) -> None:
        """The export did not end (an error, an interrupt): close the file and remove it. A
        partial file would pass for the whole export (a Parquet file closed early reads as a
        valid table of the rows before the failure). Only a regular file is removed: stdout, a
        device (``/dev/null``) or a pipe given as the output stays as it is."""
        try:
            self._close()
        except (OSError, OutputError):
            pass  # (the error that ended the export is the one to report)
        self._remove()

    def _remove(self) -> None:
        if self.path != "-" and os.path.isfile(self.path):
            try:
                os.remove(self.path)
            except OSError:
                pass


class PartitionSink(Sink):
    """The partition export as a stream sink: records are written batch by batch, ``BATCH``
    rows at a time whether they came one by one or as tables another process made (so the file
    is the same whatever the number of processes).

    ``finish`` writes the run's info and accounting into the Parquet metadata (so the file can
    stand in for its log); ``close`` closes the file, or, without a ``finish`` before it (the
    stream ended by an error), removes it (``TableWriter.abandon``).
    """

    BATCH = 4096
    takes_tables = True

    def __init__(self, path: str, fmt: str, info: Any = None) -> None:
        from cuzk_diag.frame import RecordBatches
        from cuzk_diag.records import PARTITION_SCHEMA

        self.writer = TableWriter(path, fmt, PARTITION_SCHEMA)
        self._batches = RecordBatches(self.BATCH)
        self._info = info  # the RunInfo being filled: each batch gets the era known so far
        self._finished = False

    @property
    def rows(self) -> int:
        return self.writer.rows + self._batches.rows

    def record(self, record: dict[str, Any], *, revised: bool = False) -> None:
        self._write(self._batches.add(record))

    def records(self, table: Any) -> None:
        # (A child's part, whose tables are all in hand: this process replays its run facts
        # and makes the file's metadata while the writer's thread encodes them, 0.12-0.14 s
        # of CPU on the 250 MB log.)
        self._write(self._batches.add_table(table), held=True)

    def _write(self, batches: list[Any], held: bool = False) -> None:
        from cuzk_diag.pipeline import complete_table

        for batch in batches:
            table = complete_table(batch, self._info) if self._info else batch
            self.writer.write(table, held=held)

    def finish(self, end: StreamEnd) -> None:
        from cuzk_diag.pipeline import run_metadata_of

        self._info = end.info
        self._write(self._batches.rest())
        end.accounting.add(self._batches.counts)
        self.writer.add_metadata(run_metadata_of(end.info, end.accounting))
        self._finished = True

    def close(self) -> None:
        if self._finished:
            self.writer.close()
        else:
            self.writer.abandon()


def _open(path: str) -> IO[bytes]:
    """The file of a text export (CSV, JSON Lines), written as bytes; ``-``: stdout's."""
    import sys

    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as exc:
        raise cannot_write(path, exc) from None


def cannot_write(path: str, exc: OSError) -> OutputError:
    """The error for an output path that cannot be written, with the reason a user can act on."""
    return OutputError(_why_not_writable(path, exc))


def _why_not_writable(path: str, exc: OSError) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"{path}: cannot write: directory {parent} does not exist"
    if os.path.isdir(path):
        return f"{path}: cannot write: is a directory"
    if isinstance(exc, PermissionError):
        return f"{path}: cannot write: permission denied"
    return f"{path}: cannot write: {exc.strerror or exc}"
