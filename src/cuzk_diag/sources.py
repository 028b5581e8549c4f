"""Open inputs (path, ``-``, .gz, .zst) and yield clean text chunks that end on a line boundary.

Cleaning happens chunk-wide in C-implemented code (``bytes.replace``, ``re.sub``): CRLF and lone CR
become LF, invalid UTF-8 is replaced, ANSI colour escapes and journald/syslog prefixes are removed
and counted. Memory stays bounded by the chunk size whatever the number of lines.

NUL bytes never belong to a log line. A run of them before a whole line (the hole a
``copytruncate`` rotation leaves) is removed. A line the parser would read (C++, TIMELINE or
tracing) with a NUL byte anywhere else is damaged (its text before or after the NUL may be cut or
belong to another line): it is handed on starting with ``DAMAGED`` so that the parser counts it as
malformed and reads no value from it. Other lines with NUL bytes stay other lines.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

from cuzk_diag.errors import InputError

CHUNK_SIZE = 4 << 20
#: A line longer than this is cut to this length and counted as oversized.
MAX_LINE = 1 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: First character of a line the cleaning found damaged by NUL bytes (see the module doc).
DAMAGED = "\x00"
#: How the lines the parser reads begin (a NUL run ending right before one of these is a hole).
_LINE_START_RE = re.compile(r"CUZK_TIMING: |CUZK_NTT_H: |TIMELINE,|\d{4}-\d\d-\d\dT\d\d:")
_NUL_LINE_RE = re.compile(r"^[^\n\x00]*\x00[^\n]*", re.MULTILINE)

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\n]*\x07")
#: `Nov 29 10:00:00 host cuzk[4242]: ` as journalctl (short format) or syslog writes it.
JOURNALD_RE = re.compile(
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? (\S+) ([^\s\[:]+)(?:\[(\d+)\])?: ",
    re.MULTILINE,
)


@dataclass(slots=True)
class SourceStats:
    """What cleaning found in one input."""

    name: str
    bytes_read: int = 0
    ansi_lines: int = 0
    journald_lines: int = 0
    journald_hosts: dict[str, int] = field(default_factory=dict)  # "host ident[pid]" -> lines
    decode_errors: int = 0
    oversized_lines: int = 0
    missing_final_newline: bool = False


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


def open_input(name: str) -> tuple[BinaryIO, str]:
    """Open a path or ``-`` as a binary stream, decompressing .gz/.zst by their magic bytes."""
    if name == "-":
        raw: BinaryIO = sys.stdin.buffer
        display = "<stdin>"
    else:
        display = name
        with input_errors(name):
            raw = open(name, "rb")  # noqa: SIM115 - closed by the caller via the returned stream
    peek = _peek(raw, 4)
    if peek.startswith(_GZIP_MAGIC):
        return gzip.GzipFile(fileobj=raw, mode="rb"), display  # type: ignore[return-value]
    if peek.startswith(_ZSTD_MAGIC):
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return io.BufferedReader(reader), display
    return raw, display


def _peek(stream: BinaryIO, n: int) -> bytes:
    peek = getattr(stream, "peek", None)
    if peek is not None:
        try:
            return bytes(peek(n)[:n])
        except (OSError, ValueError):
            return b""
    return b""


def read_chunks(
    stream: BinaryIO,
    stats: SourceStats,
    chunk_size: int = CHUNK_SIZE,
    *,
    follow: bool = False,
) -> Iterator[str]:
    """Yield decoded, cleaned text chunks, each a run of whole lines ending in ``\\n``.

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
        except (EOFError, OSError, gzip.BadGzipFile, zstd_error()) as exc:
            # A truncated .gz/.zst ends the input; what was read so far still counts.
            tail = carry + b"".join(pieces)
            stats.bytes_read += got
            if tail:
                stats.missing_final_newline = not tail.endswith(b"\n")
                yield clean_text(tail if tail.endswith(b"\n") else tail + b"\n", stats)
            raise InputError(f"{stats.name}: input ends early ({exc})") from None
        block = b"".join(pieces)
        if not block:
            continue
        stats.bytes_read += len(block)
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n") + 1
        if not cut:
            cut = _lone_cr_cut(buf)
        if not cut:
            if len(buf) > MAX_LINE:
                # One enormous line: keep its head, skip until its end, count it.
                stats.oversized_lines += 1
                whole, carry = _skip_to_newline(reader, buf[:MAX_LINE], stats, chunk_size)
                yield clean_text(whole, stats)
                continue
            carry = buf
            continue
        carry = buf[cut:]
        yield clean_text(buf[:cut], stats)
    if carry:
        stats.missing_final_newline = True
        yield clean_text(carry + b"\n", stats)


def zstd_error() -> type[Exception]:
    try:
        import zstandard

        err: type[Exception] = zstandard.ZstdError
        return err
    except ImportError:  # pragma: no cover
        return OSError


def _lone_cr_cut(buf: bytes) -> int:
    """Files with lone CR line ends (no LF at all): cut after the last CR not at the very end."""
    pos = buf.rfind(b"\r", 0, len(buf) - 1)
    return pos + 1 if pos >= 0 else 0


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


def clean_text(data: bytes, stats: SourceStats) -> str:
    """Normalise line ends, decode, strip ANSI and journald prefixes, chunk-wide."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
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
    if JOURNALD_RE.search(text, 0, 4096) is not None or _journald_anywhere(text):
        text = _strip_journald(text, stats)
    if DAMAGED in text:
        text = _NUL_LINE_RE.sub(_nul_line, text)
    return text


def _nul_line(m: re.Match[str]) -> str:
    ln = m.group(0)
    rest = ln.lstrip(DAMAGED)
    if len(rest) < len(ln) and DAMAGED not in rest and _LINE_START_RE.match(rest) is not None:
        return rest  # a hole before a whole line
    text = ln.replace(DAMAGED, "")
    if _LINE_START_RE.match(text) is not None or "CUZK_" in text or "TIMELINE," in text:
        return DAMAGED + text
    return ln


_ANSI_LINE_RE = re.compile(r"^[^\n\x1b]*\x1b", re.MULTILINE)


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


def iter_input(name: str, chunk_size: int = CHUNK_SIZE) -> Iterator[tuple[SourceStats, str]]:
    """Open one input and yield ``(stats, chunk)`` pairs; closes the input when done."""
    stream, display = open_input(name)
    stats = SourceStats(display)
    try:
        for chunk in read_chunks(stream, stats, chunk_size):
            yield stats, chunk
    finally:
        if name != "-":
            stream.close()


def input_size(name: str) -> int | None:
    """Size in bytes of a regular file input (for progress), or None."""
    if name == "-":
        return None
    try:
        return os.path.getsize(name)
    except OSError:
        return None
