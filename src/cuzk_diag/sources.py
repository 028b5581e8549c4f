"""Open inputs (path, ``-``, .gz, .zst) and yield clean chunks of UTF-8 text that end on a line
boundary.

Cleaning happens chunk-wide in C-implemented code (``bytes.replace``, ``re.sub``): only LF ends a
line, as for ``sed`` and ``wc -l``, so line numbers match the file. The CRs before an LF are
dropped (CRLF); a CR inside a line (a progress bar's return, a stray byte) returns the carriage as
on a terminal: the line reads as the text after its last CR, and is counted (``stray_cr_lines``).
Invalid UTF-8 is replaced, ANSI colour escapes and journald/syslog prefixes are removed
and counted. Memory stays bounded by the chunk size whatever the number of lines.

NUL bytes never belong to a log line. A run of them before a whole line (the hole a
``copytruncate`` rotation leaves) is removed. A line the parser would read (C++, TIMELINE or
tracing) with a NUL byte anywhere else is damaged (its text before or after the NUL may be cut or
belong to another line): it is handed on starting with ``DAMAGED`` so that the parser counts it as
malformed and reads no value from it. Other lines with NUL bytes stay other lines.

A line longer than ``MAX_LINE`` bytes as read is cut to them and counted (``oversized_lines``)
before any cleaning, however the input comes (a file in chunks, a pipe in pieces), so that a
log's lines are the same either way; a run of NULs it begins with is a hole, dropped first.

A chunk is handed on as bytes: most chunks need none of the text-level cleaning (no invalid
UTF-8, ESC, NUL or journald prefix), and those go on as they were read, without a decode into a
``str`` and an encode back for the parser's Arrow arrays.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from cuzk_diag.errors import InputError

CHUNK_SIZE = 4 << 20
#: A line longer than this is cut to this length and counted as oversized.
MAX_LINE = 1 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_PARQUET_MAGIC = b"PAR1"

#: First character of a line the cleaning found damaged by NUL bytes (see the module doc).
DAMAGED = "\x00"
#: How the lines the parser reads begin (a NUL run ending right before one of these is a hole).
_LINE_START_RE = re.compile(r"CUZK_TIMING: |CUZK_NTT_H: |TIMELINE,|\d{4}-\d\d-\d\dT\d\d:")
_NUL_LINE_RE = re.compile(r"^[^\n\x00]*\x00[^\n]*", re.MULTILINE)


#: CSI sequences (colours, cursor) and OSC sequences ended by BEL or ST. An OSC body stops at the
#: next ESC, so a line of unterminated OSC openers costs linear time, not quadratic.
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*+[A-Za-z]|\x1b\][^\x07\n\x1b]*+(?:\x07|\x1b\\)")
#: `Nov 29 10:00:00 host cuzk[4242]: ` as journalctl (short format) or syslog writes it.
JOURNALD_RE = re.compile(
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? (\S+) ([^\s\[:]+)(?:\[(\d+)\])?: ",
    re.MULTILINE,
)
#: Where ``JOURNALD_RE`` looks on every chunk: its first characters (the rest only where "]: "
#: occurs, ``_journald_anywhere``).
JOURNALD_HEAD = 4096
#: What every ``JOURNALD_RE`` match begins with, in bytes: a chunk's head without it at the
#: start of a line has none. Its first line is tested with ``_JOURNALD_START_RE.match``, the
#: others by the newline before them: a search for a pattern that starts with a literal skips
#: to it, where ``^`` with ``re.MULTILINE`` tries a match at every byte (0.13 ms on the 16 KiB
#: head of each 64 KiB piece a pipe hands live mode's reader, against 0.013 ms).
_JOURNALD_START_RE = re.compile(rb"[A-Z][a-z]{2} ")
_JOURNALD_LINE_RE = re.compile(rb"\n[A-Z][a-z]{2} ")


@dataclass(slots=True)
class SourceStats:
    """What cleaning found in one input."""

    name: str
    bytes_read: int = 0
    bytes_taken: int = 0  # of them, the bytes of the lines yielded so far (not a line's start)
    ansi_lines: int = 0
    journald_lines: int = 0
    journald_hosts: dict[str, int] = field(default_factory=dict)  # "host ident[pid]" -> lines
    decode_errors: int = 0
    oversized_lines: int = 0
    stray_cr_lines: int = 0  # lines with a CR inside: only the text after the last CR is read
    missing_final_newline: bool = False
    truncated: str | None = None  # why the input ended early (a truncated .gz/.zst), if it did

    def add(self, later: SourceStats) -> None:
        """Take in the counts of the same input's text read after this (``open_window``), as
        if one pass had counted both."""
        self.bytes_read += later.bytes_read
        self.bytes_taken += later.bytes_taken
        self.ansi_lines += later.ansi_lines
        self.journald_lines += later.journald_lines
        for host, n in later.journald_hosts.items():
            self.journald_hosts[host] = self.journald_hosts.get(host, 0) + n
        self.decode_errors += later.decode_errors
        self.oversized_lines += later.oversized_lines
        self.stray_cr_lines += later.stray_cr_lines
        self.missing_final_newline = later.missing_final_newline
        self.truncated = later.truncated or self.truncated


@contextmanager
def input_errors(name: str) -> Iterator[None]:
    """Turn the OS's reasons for not opening an input into one clear ``InputError``."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory") from None
    except PermissionError:
        raise InputError(f"{name}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{name}: {exc.strerror or exc}") from None


#: What an input is, by its first bytes (``sniff``).
TEXT = "text"
GZIP = "gzip"
ZSTD = "zstd"
PARQUET = "parquet"
UTF8_BOM = "utf-8-sig"
UTF16 = "utf-16"  # with a byte-order mark
UTF16_LE = "utf-16-le"
UTF16_BE = "utf-16-be"
_UTF16_KINDS = (UTF16, UTF16_LE, UTF16_BE)
#: Bytes ``sniff`` looks at; where they look like UTF-16 without a byte-order mark, it looks at
#: this many (``sample_size``) to tell such a log from one in UTF-8 that begins with NUL bytes
#: between letters (a torn write, junk).
MAGIC_BYTES = 4
UTF16_SAMPLE = 64


def sniff(head: bytes) -> str:
    """The kind of an input from its first ``MAGIC_BYTES`` bytes (``UTF16_SAMPLE`` where they
    look like UTF-16 without a byte-order mark; ``head`` may hold more, which it leaves)."""
    if head.startswith(_GZIP_MAGIC):
        return GZIP
    if head.startswith(_ZSTD_MAGIC) or _skippable_frame(head):
        return ZSTD
    if head.startswith(_PARQUET_MAGIC):
        return PARQUET
    if head.startswith(b"\xef\xbb\xbf"):
        return UTF8_BOM
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return UTF16
    if _utf16_text(head, 0):
        return UTF16_LE  # ASCII text in UTF-16 without a byte-order mark
    if _utf16_text(head, 1):
        return UTF16_BE
    return TEXT


def _ascii_units(head: bytes, low: int) -> list[bool]:
    """Whether each whole two-byte unit of ``head`` is an ASCII character in UTF-16 (its byte
    ``low`` not NUL, the other NUL)."""
    return [bool(head[i + low]) and not head[i + 1 - low] for i in range(0, len(head) - 1, 2)]


def _utf16_text(head: bytes, low: int) -> bool:
    """Text in UTF-16 without a byte-order mark (``low``: 0 little-endian, 1 big-endian): its
    first two units ASCII, and three in four of those ``head`` holds. (A log's lines are ASCII
    but for a rare word; a UTF-8 log whose first bytes are ``a\0b\0`` goes on in bytes that are
    not NUL.)"""
    units = _ascii_units(head[:UTF16_SAMPLE], low)
    return len(units) >= 2 and units[0] and units[1] and 4 * sum(units) >= 3 * len(units)


def sample_size(head: bytes) -> int:
    """The bytes ``sniff`` needs to tell the kind of an input whose first ``MAGIC_BYTES`` bytes
    are ``head``: more only where they look like UTF-16 without a byte-order mark."""
    first = head[:MAGIC_BYTES]
    return UTF16_SAMPLE if _utf16_text(first, 0) or _utf16_text(first, 1) else MAGIC_BYTES


def sniff_stream(stream: BinaryIO) -> tuple[str, BinaryIO]:
    """``sniff`` of a stream's first bytes, and a stream that still yields them (the bytes it
    needs, ``sample_size``: fewer at the end of the input)."""
    head, stream = peek_head(stream, MAGIC_BYTES)
    need = sample_size(head)
    if need > len(head):
        head, stream = peek_head(stream, need)
    return sniff(head), stream


def _skippable_frame(head: bytes) -> bool:
    """A zstd skippable frame (magic 0x184D2A50 to 0x184D2A5F, little-endian), with which
    ``pzstd`` and seekable zstd files begin."""
    return len(head) >= 4 and head[0] & 0xF0 == 0x50 and head[1:4] == b"\x2a\x4d\x18"


@dataclass(slots=True)
class Source:
    """An opened input: its first bytes have been looked at, none of them lost (a pipe or a
    FIFO can be read only once, so it is opened once and sniffed without consuming)."""

    name: str  # as given: a path or ``-``
    display: str  # for messages and the accounting: the path or ``<stdin>``
    raw: BinaryIO  # positioned at the first byte
    kind: str  # ``sniff`` of the first bytes
    regular: bool  # a regular file (seekable, can be opened again by name)

    def text_stream(self) -> BinaryIO:
        """The bytes of the log: decompressed (.gz, .zst) or transcoded to UTF-8 (UTF-16)."""
        if self.kind == PARQUET:
            raise InputError(
                f"{self.display}: is a Parquet export, not a log; give it alone to analyze, "
                "check, compare or export"
            )
        stream: BinaryIO = decoded(self.raw, self.kind)
        return stream

    def read_all(self) -> bytes:
        """Every byte of the input (for a Parquet export that came through a pipe)."""
        parts = []
        while block := self.raw.read(CHUNK_SIZE):
            parts.append(block)
        return b"".join(parts)

    def close(self) -> None:
        if self.name != "-":
            self.raw.close()


def open_source(name: str) -> Source:
    """Open a path or ``-`` once and sniff its kind without consuming a byte."""
    if name == "-":
        raw: BinaryIO = sys.stdin.buffer
        display = "<stdin>"
    else:
        display = name
        with input_errors(name):
            raw = open(name, "rb")  # noqa: SIM115 - closed by Source.close
    regular = False
    if name != "-":
        try:
            regular = stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
        except (OSError, ValueError):
            regular = False
    kind, raw = sniff_stream(raw)
    return Source(name, display, raw, kind, regular)


class _Window:
    """Bytes ``[start, stop)`` of a file, read as ``read_chunks`` reads a stream."""

    def __init__(self, name: str, start: int, stop: int | None) -> None:
        with input_errors(name):
            self.fh = open(name, "rb")  # noqa: SIM115 - closed by close()
            self.fh.seek(start)
        self.left = None if stop is None else max(0, stop - start)

    def read(self, n: int = -1) -> bytes:
        if self.left is not None:
            n = self.left if n < 0 else min(n, self.left)
        data = self.fh.read(n)
        if self.left is not None:
            self.left -= len(data)
        return data

    read1 = read

    def close(self) -> None:
        self.fh.close()


def open_window(name: str, start: int, stop: int | None = None) -> Source:
    """Bytes ``[start, stop)`` (to the end when ``stop`` is None) of a regular, uncompressed
    UTF-8 file, as a ``Source`` that ``iter_input`` reads. ``start`` and ``stop`` must be the
    starts of lines (or the end): cleaning is line by line, so the windows of a file, read one
    after the other, give the text and, added up (``SourceStats.add``), the counts of one pass
    over it."""
    return Source(name, name, _Window(name, start, stop), TEXT, True)  # type: ignore[arg-type]


def open_input(name: str) -> tuple[BinaryIO, str]:
    """Open a path or ``-`` as a binary stream of log bytes (.gz/.zst decompressed, UTF-16
    transcoded, by their first bytes)."""
    src = open_source(name)
    return src.text_stream(), src.display


def peek_head(stream: BinaryIO, n: int) -> tuple[bytes, BinaryIO]:
    """The first ``n`` bytes (fewer at end of input) and a stream that still yields them."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        try:
            head = bytes(peek(n)[:n])
        except (OSError, ValueError):
            head = b""
        if len(head) >= n:
            return head, stream
    head = b""
    while len(head) < n:
        more = stream.read(n - len(head))
        if not more:
            break
        head += more
    return head, Pushback(stream, head)  # type: ignore[return-value]


class Pushback:
    """A stream whose first bytes were already read (to look at them), put back in front."""

    def __init__(self, stream: Any, head: bytes) -> None:
        self.stream = stream
        self.head = head

    def read1(self, n: int = 1 << 16) -> bytes:
        if self.head:
            size = n if n and n > 0 else len(self.head)
            head, self.head = self.head[:size], self.head[size:]
            return head
        read1 = getattr(self.stream, "read1", None)
        return bytes(read1(n) if read1 is not None else self.stream.read(n))

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            parts = [self.head]
            self.head = b""
            while block := self.stream.read(CHUNK_SIZE):
                parts.append(block)
            return b"".join(parts)
        return self.read1(n)

    def readinto(self, buf: Any) -> int:
        data = self.read1(len(buf))
        buf[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.stream.close()


def decoded(raw: Any, kind: str) -> Any:
    """``raw`` as a stream of UTF-8 log bytes: decompressed or transcoded by its ``kind`` (and
    a compressed log's text transcoded by its own first bytes, ``_text_of``)."""
    if kind == GZIP:
        return _text_of(gzip.GzipFile(fileobj=raw, mode="rb"))
    if kind == ZSTD:
        return _text_of(ZstdReader(raw))
    if kind in _UTF16_KINDS:
        return Utf16Reader(raw, kind)
    if kind == UTF8_BOM:
        raw.read(3)
    return raw


def _text_of(stream: Any) -> Any:
    """A decompressed log as UTF-8 bytes: transcoded where its first bytes (``peek``ed: one
    read, none consumed) show UTF-16 or a UTF-8 byte-order mark (a UTF-16 log compressed, as
    Windows tools write them). Data damaged from its start is left for ``read_chunks``, which
    reports it, and no byte is decoded before that."""
    try:
        head = bytes(stream.peek(UTF16_SAMPLE)[:UTF16_SAMPLE])
    except (EOFError, OSError, zlib.error, zstd_error()):
        return stream
    kind = sniff(head)
    if kind in _UTF16_KINDS or kind == UTF8_BOM:
        return decoded(stream, kind)
    return stream


class ZstdReader:
    """zstd frames decompressed as they come; ``EOFError`` when the data ends inside a frame.

    (zstandard's stream reader returns end of data silently on a truncated file.) Compressed
    input is fed in small pieces so that what one piece expands to stays bounded even for a
    decompression bomb (zstd expands 4 bytes to at most 128 KiB), and no read returns more
    than was asked for.
    """

    PIECE = 256

    def __init__(self, raw: Any) -> None:
        import zstandard

        self.raw = raw
        self._read = getattr(raw, "read1", None) or raw.read
        self._dctx = zstandard.ZstdDecompressor()
        self._dobj = self._dctx.decompressobj()
        self._pending = memoryview(b"")  # compressed bytes read, fed up to _pos
        self._pos = 0
        self._out = b""  # decompressed bytes not returned yet
        self._in_frame = False
        self._error: Exception | None = None  # raised once the bytes before it are returned

    def read1(self, n: int = 1 << 16) -> bytes:
        n = n if n and n > 0 else 1 << 16
        self._fill()
        data, self._out = self._out[:n], self._out[n:]
        return data

    read = read1

    def peek(self, n: int = 1) -> bytes:
        """The next bytes, at least one unless at the end, without consuming them."""
        self._fill()
        return self._out

    def _fill(self) -> None:
        """Decompress until some bytes are there to return (none at the end of the data)."""
        while not self._out:
            if self._error is not None:
                raise self._error
            if self._pos >= len(self._pending):
                self._pending = memoryview(self._read(1 << 16))
                self._pos = 0
                if not self._pending:
                    if self._in_frame:
                        raise EOFError("zstd data ends inside a frame")
                    return
            piece: bytes | memoryview = self._pending[self._pos : self._pos + self.PIECE]
            self._pos += self.PIECE
            out = []
            try:
                while piece:
                    out.append(self._dobj.decompress(piece))
                    if self._dobj.eof:
                        piece = self._dobj.unused_data
                        self._dobj = self._dctx.decompressobj()
                        self._in_frame = False
                    else:
                        piece = b""
                        self._in_frame = True
            except Exception as exc:  # zstandard.ZstdError: damage, or bytes after the frames
                # (The bytes of the frames before it are data: returned first.)
                self._error = exc
            self._out = b"".join(out)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()


class Utf16Reader:
    """A UTF-16 log (as Windows tools write them) read as UTF-8 bytes, which the rest of the
    reader speaks. Undecodable code units come out as invalid UTF-8, so they are counted."""

    def __init__(self, raw: Any, encoding: str) -> None:
        import codecs

        self.raw = raw
        self._read = getattr(raw, "read1", None) or raw.read
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._done = False

    def read1(self, n: int = 1 << 16) -> bytes:
        while not self._done:
            data = self._read(max(2, n if n and n > 0 else 1 << 16))
            self._done = not data
            text = self._decoder.decode(data, final=self._done)
            if text:
                # U+FFFD from a bad code unit becomes the byte 0xff: clean_chunk counts it.
                return text.replace("\ufffd", "\udcff").encode("utf-8", "surrogateescape")
        return b""

    read = read1

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()


def read_chunks(
    stream: BinaryIO,
    stats: SourceStats,
    chunk_size: int = CHUNK_SIZE,
    *,
    follow: bool = False,
) -> Iterator[bytes]:
    """Yield cleaned chunks of UTF-8 text (``clean_chunk``), each a run of whole lines ending
    in ``\\n``.

    A last line without a newline is yielded with one added (and noted in ``stats``).
    With ``follow`` the stream is read with ``read1`` so that data is yielded as it arrives.
    """
    carry = b""
    read1 = getattr(stream, "read1", None)
    reader = read1 if read1 is not None else stream.read
    eof = False
    while not eof:
        pieces: list[bytes] = []
        got = 0
        try:
            # read1 hands over what is there (pipes, live logs, a truncated .gz) without
            # waiting for a whole chunk; pieces are joined so that chunks stay large.
            while got < chunk_size:
                piece = reader(chunk_size - got)
                if not piece:
                    eof = True
                    break
                pieces.append(piece)
                got += len(piece)
                if follow:
                    break
        except (EOFError, OSError, gzip.BadGzipFile, zlib.error, zstd_error()) as exc:
            # A truncated .gz/.zst (or a read error) ends the input: the whole lines read so far
            # count, the cut last line does not (its last value may be cut short), and the
            # truncation is noted for the accounting and the log-coverage rule.
            tail = carry + b"".join(pieces)
            stats.bytes_read += got
            cut = max(tail.rfind(b"\n"), tail.rfind(b"\r")) + 1
            if cut:
                stats.bytes_taken = stats.bytes_read - (len(tail) - cut)
                yield clean_chunk(tail[:cut], stats)
            stats.truncated = truncation_reason(exc, len(tail) - cut)
            return
        block = b"".join(pieces)
        if not block:
            continue
        stats.bytes_read += len(block)
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n") + 1
        if not cut:
            # (A hole longer than a line may be is dropped as it comes: the line after it is
            # read whole, however the input comes in pieces: a pipe, live mode, a hole longer
            # than a chunk.)
            buf = _hole_dropped(buf)
            if len(buf) > MAX_LINE:
                # One enormous line: keep its head, skip until its end, count it.
                stats.oversized_lines += 1
                whole, carry = _skip_to_newline(reader, buf[:MAX_LINE], stats, chunk_size)
                stats.bytes_taken = stats.bytes_read - len(carry)
                yield clean_chunk(whole, stats)
                continue
            carry = buf
            continue
        carry = buf[cut:]
        stats.bytes_taken = stats.bytes_read - len(carry)
        yield clean_chunk(buf[:cut], stats)
    if carry:
        stats.missing_final_newline = True
        stats.bytes_taken = stats.bytes_read
        yield clean_chunk(carry + b"\n", stats)


def truncation_reason(exc: BaseException, cut_bytes: int) -> str:
    """What ended an input early, in words, with the cut line that was not read."""
    if isinstance(exc, EOFError):
        why = f"compressed data ends early ({exc})"
    elif isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and exc.strerror:
        why = f"read error ({exc.strerror})"
    else:
        why = f"compressed data is damaged ({exc})"
    if cut_bytes:
        why += f"; the cut last line ({cut_bytes:,} bytes) was not read"
    return why


def zstd_error() -> type[Exception]:
    try:
        import zstandard

        err: type[Exception] = zstandard.ZstdError
        return err
    except ImportError:  # pragma: no cover
        return OSError


def _skip_to_newline(
    reader: Callable[[int], bytes], head: bytes, stats: SourceStats, chunk_size: int
) -> tuple[bytes, bytes]:
    """Discard the rest of an oversized line: (its head plus the whole lines after, carry)."""
    while True:
        block = reader(chunk_size)
        if not block:
            return head + b"\n", b""
        stats.bytes_read += len(block)
        pos = block.find(b"\n")
        if pos >= 0:
            rest = block[pos + 1 :]
            cut = rest.rfind(b"\n") + 1
            return head + b"\n" + rest[:cut], rest[cut:]


def clean_chunk(data: bytes, stats: SourceStats) -> bytes:
    """Normalise line ends, replace invalid UTF-8, strip ANSI and journald prefixes, chunk-wide:
    the cleaned lines as UTF-8 (``data`` itself when only its line ends needed a look). Lines
    longer than ``MAX_LINE`` bytes as read are cut first (``_cut_long_lines``)."""
    if len(data) > MAX_LINE and _has_long_line(data):
        data = _cut_long_lines(data, stats)
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if b"\r" in data:
            data = _CR_END_RE.sub(b"\n", data)
            data, n = _CR_RETURN_RE.subn(b"", data)
            stats.stray_cr_lines += n
    if _plain(data):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        stats.decode_errors += sum(1 for ln in text.split("\n") if "\ufffd" in ln)
    if "\x1b" in text:
        stats.ansi_lines += len(_ANSI_LINE_RE.findall(text))
        text = ANSI_RE.sub("", text)
        if "\x1b" in text:  # a stray ESC that starts no sequence
            text = text.replace("\x1b", "")
    if JOURNALD_RE.search(text, 0, JOURNALD_HEAD) is not None or _journald_anywhere(text):
        text = _strip_journald(text, stats)
    # (Looked for in the bytes, which hold a NUL exactly where the text did before the strips
    # above: a search of the text for it is slow once the text holds any character past
    # U+00FF, and the substitution finds nothing when a strip took the NULs.)
    if _DAMAGED_BYTE in data:
        text = _NUL_LINE_RE.sub(_nul_line, text)
    return text.encode("utf-8")


_DAMAGED_BYTE = DAMAGED.encode()


def _has_long_line(data: bytes) -> bool:
    """Whether a line of ``data`` is longer than ``MAX_LINE`` bytes. Such a line holds a whole
    half-``MAX_LINE`` window of the bytes without a newline: one ``bytes.find`` a window (the C
    library's ``memchr``, which stops at the window's first newline) rules them out."""
    half = MAX_LINE // 2
    return any(data.find(b"\n", k, k + half) < 0 for k in range(0, len(data) - half + 1, half))


def _hole_dropped(line: bytes) -> bytes:
    """A line (or the start of one) longer than ``MAX_LINE`` bytes that begins with a run of
    NULs, without it: the run is a hole (see the module text), no line."""
    if len(line) > MAX_LINE and line[:1] == b"\x00":
        return line.lstrip(b"\x00")
    return line


def _cut_long_lines(data: bytes, stats: SourceStats) -> bytes:
    """Each line of ``data`` longer than ``MAX_LINE`` bytes as it was read, before any cleaning
    (which may shorten it: its NUL bytes, CRs and escapes go): a run of NULs it begins with is
    a hole, dropped; what is left past ``MAX_LINE`` is cut, and the line counted as oversized.
    The rule ``read_chunks`` applies to a line longer than what it holds, so that a log's
    lines are the same read from a file or in pieces (stdin, live mode)."""
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE:
            line = _hole_dropped(line)
            if len(line) > MAX_LINE:
                stats.oversized_lines += 1
                line = line[:MAX_LINE]
            lines[i] = line
    return b"\n".join(lines)


def _plain(data: bytes) -> bool:
    """Whether ``data`` needs no cleaning past its line ends: valid UTF-8 without ESC or NUL
    bytes, in which ``clean_chunk``'s journald test cannot match (no line in its first
    ``JOURNALD_HEAD`` characters, at most 4 bytes each, starts as a prefix does, and no "]: ")."""
    if b"\x1b" in data or _DAMAGED_BYTE in data or _bracket_colon(data):
        return False
    if _journald_start(data, 4 * JOURNALD_HEAD):
        return False
    return data.isascii() or utf8_valid(data)


def _journald_start(data: bytes, end: int) -> bool:
    """Whether a line of ``data[:end]`` starts as a journald prefix does (the whole of its start,
    ``[A-Z][a-z]{2} ``, before ``end``)."""
    return (
        _JOURNALD_START_RE.match(data, 0, end) is not None
        or _JOURNALD_LINE_RE.search(data, 0, end) is not None
    )


def newlines(data: bytes) -> int:
    """The ``\n`` bytes in ``data``, counted by numpy: ``data.count(b"\n")`` takes 1.2 ms for
    4 MiB of a log, this 0.25 ms."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A))


#: ``]`` bytes that ``_bracket_colon`` looks at one at a time before it searches the rest of the
#: bytes with numpy.
BRACKETS_ONE_BY_ONE = 16


def _bracket_colon(data: bytes) -> bool:
    """Whether ``data`` holds ``]: `` (where a journald prefix ends). The first
    ``BRACKETS_ONE_BY_ONE`` ``]`` bytes are found by ``bytes.find`` (the C library's ``memchr``:
    0.15 ms for a 4 MiB chunk of a log with one) and the two bytes after each compared; past
    them, numpy finds the ``]`` bytes left (0.6 ms for the chunk, however many there are).
    ``b"]: " in data`` took 2.8 ms on the chunk (its search skips by the needle's last byte, a
    space, which every few bytes of a log are)."""
    at = data.find(b"]")
    for _ in range(BRACKETS_ONE_BY_ONE):
        if at < 0:
            return False
        if data.startswith(b": ", at + 1):
            return True
        at = data.find(b"]", at + 1)
    if at < 0:
        return False
    a = np.frombuffer(data, dtype=np.uint8)
    hits = np.flatnonzero(a[at:-2] == 0x5D) + at  # "]"
    return bool(((a[hits + 1] == 0x3A) & (a[hits + 2] == 0x20)).any())  # ": "


def utf8_valid(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8, as ``bytes.decode`` would find it, without making the
    text: Arrow's check of a one-value string array (a tenth of a decode's time)."""
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    arr = pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(data))
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _nul_line(m: re.Match[str]) -> str:
    ln = m.group(0)
    rest = ln.lstrip(DAMAGED)
    if not rest:
        return rest  # a hole before an empty line (a line of NULs only)
    if len(rest) < len(ln) and DAMAGED not in rest and _LINE_START_RE.match(rest) is not None:
        return rest  # a hole before a whole line
    text = ln.replace(DAMAGED, "")
    if _LINE_START_RE.match(text) is not None or "CUZK_" in text or "TIMELINE," in text:
        return DAMAGED + text
    return ln


_ANSI_LINE_RE = re.compile(r"^[^\n\x1b]*\x1b", re.MULTILINE)
#: A run of CRs ending a line (``\r\r\n``); the lookbehind starts it at the run's first CR.
_CR_END_RE = re.compile(rb"(?<!\r)\r++\n")
#: A line's text up to its last CR (a carriage return inside the line): one match per line.
_CR_RETURN_RE = re.compile(rb"^(?:[^\n\r]*+\r)++", re.MULTILINE)


def _journald_anywhere(text: str) -> bool:
    # Cheap guard: journald prefixes put "]: " early on most lines; only then scan fully.
    return "]: " in text and JOURNALD_RE.search(text) is not None


def _strip_journald(text: str, stats: SourceStats) -> str:
    hosts = stats.journald_hosts

    def repl(m: re.Match[str]) -> str:
        key = f"{m.group(1)} {m.group(2)}" + (f"[{m.group(3)}]" if m.group(3) else "")
        hosts[key] = hosts.get(key, 0) + 1
        return ""

    new, n = JOURNALD_RE.subn(repl, text)
    stats.journald_lines += n
    return new


def iter_input(
    name: str | Source, chunk_size: int = CHUNK_SIZE
) -> Iterator[tuple[SourceStats, bytes]]:
    """Open one input (or take an opened ``Source``) and yield ``(stats, chunk)`` pairs (the
    chunks of ``read_chunks``), at least one (an empty input yields ``(stats, b"")``, so that
    its stats are seen); closes the input when done."""
    src = name if isinstance(name, Source) else open_source(name)
    stats = SourceStats(src.display)
    empty = True
    try:
        for chunk in read_chunks(src.text_stream(), stats, chunk_size):
            empty = False
            yield stats, chunk
        if empty:
            yield stats, b""
    finally:
        src.close()


def input_size(name: str) -> int | None:
    """Bytes of log text in ``name`` known ahead (for progress): the size of an uncompressed
    regular file; None for stdin, a pipe or a FIFO (never opened here: they are read once),
    compressed or transcoded input, or a file that cannot be read."""
    if name == "-":
        return None
    try:
        st = os.stat(name)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(name, "rb") as fh:
            head = fh.read(UTF16_SAMPLE)
    except OSError:
        return None
    return st.st_size if sniff(head) == TEXT else None
