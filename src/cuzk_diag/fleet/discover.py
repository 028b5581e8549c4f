"""Find the log files of a fleet, give each a host and group rotated files into units of work.

A *unit* is what one worker reads in one go: the files of one rotation group of one host
(``daemon.log.3.gz``, ``daemon.log.2``, ``daemon.log.1``, ``daemon.log``, oldest first), so a
run whose lines were rotated across files stays one run. Units are independent of each other.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from cuzk_diag.errors import InputError

#: File names taken when a directory is walked: ``*.log``, ``*.log.N`` and their archives.
LOG_NAME_RE = re.compile(r"\.log(\.\d+)?(\.(gz|zst))?$")
_ROTATION_RE = re.compile(r"^(?P<base>.*?\.log)(?:\.(?P<n>\d+))?(?:\.(?:gz|zst))?$")
_HASH_SPAN = 1 << 20  # bytes hashed at each end of a file for its change key
UNKNOWN_HOST = "unknown"


@dataclass(frozen=True, slots=True)
class LogFile:
    """One input file and what identifies its content for incremental runs."""

    path: str
    size: int
    mtime_ns: int
    host_hint: str | None  # from --host-from or the directory layout; None when unknown

    def key(self) -> list[object]:
        """Path, size, mtime and a hash of the first and last MiB: changes when the file does."""
        return [self.path, self.size, self.mtime_ns, content_hash(self.path, self.size)]


def is_url(path: str) -> bool:
    """``s3://bucket/x.log``, ``gs://...``, ``file://...``: read through fsspec."""
    return "://" in path


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:
        raise InputError(f"{url}: URLs need fsspec (pip install 'cuzk-diag[dask]')") from None
    try:
        fs, inner = fsspec.core.url_to_fs(url)
        return fs, str(inner)
    except (ImportError, ValueError) as exc:
        raise InputError(f"{url}: no file system for this URL ({exc})") from None


def open_binary(path: str) -> BinaryIO:
    """A local path or an fsspec URL, opened for reading bytes."""
    if not is_url(path):
        return open(path, "rb")
    fs, inner = _fs(path)
    return fs.open(inner, "rb")  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Unit:
    """The files of one rotation group, oldest first; the unit of work of a fleet build."""

    group: str  # host hint + rotation base path, stable across runs
    files: tuple[LogFile, ...]
    host_hint: str | None

    @property
    def unit_id(self) -> str:
        return hashlib.sha256(self.group.encode()).hexdigest()[:16]

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def key(self) -> list[list[object]]:
        return [f.key() for f in self.files]


@dataclass(slots=True)
class Discovery:
    units: list[Unit] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # walked files whose names are not logs


def no_regular_file(path: str) -> bool:
    """A local path that is no regular file (a broken link, a FIFO, a socket or a device):
    never opened (a FIFO would wait for a writer); its unit fails with the reason."""
    return not is_url(path) and not os.path.isfile(path)


def content_hash(path: str, size: int) -> str:
    if no_regular_file(path):
        return ""
    h = hashlib.sha256()
    with open_binary(path) as fh:
        h.update(fh.read(_HASH_SPAN))
        if size > 2 * _HASH_SPAN:
            fh.seek(size - _HASH_SPAN)
            h.update(fh.read(_HASH_SPAN))
        elif size > _HASH_SPAN:
            h.update(fh.read())
    return h.hexdigest()[:32]


def discover(inputs: Sequence[str], host_from: str | None = None) -> Discovery:
    """Files, directories (walked) and globs -> units of work, in a stable order.

    ``host_from`` is a regular expression searched in each path; its group ``host`` (or its
    first group, or the whole match) names the host. Otherwise the host is the directory under
    a walked root (``ROOT/HOST/daemon.log``), or the file's parent directory; a journald prefix
    in the log itself, found while reading, takes precedence over the directory.
    """
    pattern = _compile(host_from)
    found: list[tuple[str, str | None]] = []  # (path, directory-derived host)
    out = Discovery()
    stats: dict[str, tuple[int, int]] = {}
    for item in inputs:
        if item == "-":
            raise InputError("fleet reads files, not stdin ('-')")
        if is_url(item):
            for url, dir_host, size, mtime in _walk_url(item):
                if LOG_NAME_RE.search(url.rsplit("/", 1)[-1]):
                    found.append((url, dir_host))
                    stats[url] = (size, mtime)
                else:
                    out.skipped.append(url)
        elif os.path.isdir(item):
            for path in _walk(item):
                if LOG_NAME_RE.search(os.path.basename(path)):
                    found.append((path, _dir_host(item, path)))
                else:
                    out.skipped.append(path)
        elif os.path.isfile(item):
            found.append((item, _parent_name(item)))
        elif glob.has_magic(item):
            matches = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
            if not matches:
                raise InputError(f"{item}: no file matches")
            found += [(p, _parent_name(p)) for p in matches]
        else:
            raise InputError(f"{item}: no such file or directory")
    seen: set[str] = set()
    groups: dict[str, list[LogFile]] = {}
    hints: dict[str, str | None] = {}
    for path, dir_host in found:
        real = path if is_url(path) else os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        hint = _regex_host(pattern, path) if pattern else dir_host
        if is_url(path):
            size, mtime = stats[path]
        else:
            try:
                st = os.stat(path)
                size, mtime = st.st_size, st.st_mtime_ns
            except OSError:  # (a broken link: its unit fails when read, with the reason)
                size, mtime = 0, 0
        lf = LogFile(path, size, mtime, hint)
        group = f"{hint or ''}\0{real.rsplit('/', 1)[0]}/{rotation_base(path)}"
        groups.setdefault(group, []).append(lf)
        hints[group] = hint
    for group in sorted(groups):
        files = sorted(groups[group], key=_rotation_order)
        out.units.append(Unit(group, tuple(files), hints[group]))
    if not out.units:
        raise InputError("no log files found (looked for *.log, *.log.N, .gz, .zst)")
    return out


def rotation_base(path: str) -> str:
    """``daemon.log.2.gz`` -> ``daemon.log``; names outside the pattern are their own group."""
    name = os.path.basename(path)
    m = _ROTATION_RE.match(name)
    return m.group("base") if m else name


def _rotation_order(f: LogFile) -> tuple[int, str]:
    """Oldest first: the highest rotation number first, the live file (no number) last."""
    m = _ROTATION_RE.match(os.path.basename(f.path))
    n = int(m.group("n")) if m and m.group("n") else 0
    return (-n, f.path)


def _walk_url(url: str) -> Iterable[tuple[str, str | None, int, int]]:
    """(url, host from the directory, size, mtime in ns) of every file under or matching url."""
    fs, inner = _fs(url)
    protocol = url.split("://", 1)[0]
    try:
        if fs.isdir(inner):
            entries = fs.find(inner, detail=True)
            root = inner.rstrip("/")
        elif glob.has_magic(inner):
            entries = fs.glob(inner, detail=True)
            root = None
        else:
            entries = {inner: fs.info(inner)}
            root = None
    except FileNotFoundError:
        raise InputError(f"{url}: no such file or directory") from None
    except OSError as exc:
        raise InputError(f"{url}: cannot list ({exc})") from None
    if not entries:
        raise InputError(f"{url}: no file matches")
    for name in sorted(entries):
        info = entries[name]
        if info.get("type") == "directory":
            continue
        parts = name.split("/")
        if root is not None:
            rel = name[len(root) :].strip("/").split("/")
            host = rel[0] if len(rel) > 1 else (parts[-2] if len(parts) > 1 else None)
        else:
            host = parts[-2] if len(parts) > 1 else None
        mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or 0
        if hasattr(mtime, "timestamp"):
            mtime = mtime.timestamp()
        full = name if "://" in name else f"{protocol}://{name}"
        yield full, host or None, int(info.get("size") or 0), int(float(mtime) * 1e9)


def _walk(root: str) -> Iterable[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            yield os.path.join(dirpath, name)


def _dir_host(root: str, path: str) -> str | None:
    rel = Path(os.path.relpath(path, root)).parts
    return rel[0] if len(rel) > 1 else _parent_name(path)


def _parent_name(path: str) -> str | None:
    name = Path(os.path.abspath(path)).parent.name
    return name or None


def _compile(host_from: str | None) -> re.Pattern[str] | None:
    if host_from is None:
        return None
    try:
        return re.compile(host_from)
    except re.error as exc:
        raise InputError(f"--host-from: not a regular expression ({exc})") from None


def _regex_host(pattern: re.Pattern[str], path: str) -> str | None:
    m = pattern.search(path)
    if not m:
        return None
    if "host" in pattern.groupindex:
        return m.group("host")
    return m.group(1) if pattern.groups else m.group(0)


def safe_host(name: str | None) -> str:
    """A host name usable as a Hive partition value (``host=NAME``)."""
    if not name:
        return UNKNOWN_HOST
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:128]
    return cleaned.strip(".") or UNKNOWN_HOST
