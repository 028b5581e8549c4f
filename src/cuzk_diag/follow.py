"""Read a growing log file as ``tail -F`` does: survive rotation and truncation, wait for it.

``FollowFile`` is a binary stream whose ``read1`` blocks until data arrives (polling, so it
works on every filesystem) and returns ``b""`` only once ``stop`` is set. Rotation is noticed
by the path naming another file (inode or device changed, or the path vanished and came back);
the rest of the old file is read first. Truncation is noticed by the size falling below the
read position; reading starts again at the beginning. A followed file must be a plain log:
its first bytes (and a new file's, after a rotation or truncation) are looked at as ``sources``
sniffs an input, a UTF-8 byte-order mark dropped, and a compressed, UTF-16 or Parquet file
refused with a clear message (read as it is, it was lines of garbage).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable

from cuzk_diag.errors import InputError
from cuzk_diag.sources import GZIP, PARQUET, TEXT, UTF8_BOM, ZSTD, sniff

#: Seconds between checks of an idle file: bounds the delay from a write to its read.
POLL_SECONDS = 0.1
#: What a followed file is, by its first bytes, when it is no plain log (UTF-16 otherwise).
_NOT_PLAIN = {GZIP: "gzip-compressed", ZSTD: "zstd-compressed", PARQUET: "a Parquet export"}


class FollowFile:
    """A path followed across rotation and truncation; ``read1`` returns what is new."""

    def __init__(
        self,
        path: str,
        stop: threading.Event,
        *,
        poll: float = POLL_SECONDS,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.stop = stop
        self.poll = poll
        self.notice = notice or (lambda _text: None)
        self.fd: int | None = None
        self.ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the open file
        self.pos = 0
        self.rotations = 0
        self.truncations = 0
        self._last_byte = b"\n"
        self._pending_newline = False
        self._waiting_noted = False

    # -- the stream interface read_chunks uses ---------------------------------------------------

    def read1(self, n: int = 1 << 16) -> bytes:
        """Up to ``n`` new bytes; blocks while there are none; ``b""`` once stopped."""
        while not self.stop.is_set():
            if self.fd is None and not self._open():
                self.stop.wait(self.poll)
                continue
            if self._pending_newline:
                # The old file ended inside a line: end it, so that it is not glued to the
                # first line of the new file.
                self._pending_newline = False
                self._last_byte = b"\n"
                return b"\n"
            assert self.fd is not None
            data = os.read(self.fd, n)
            if data:
                first = self.pos == 0
                self.pos += len(data)
                if first:
                    data = self._plain(data)
                    if not data:
                        continue  # (a byte-order mark alone so far)
                self._last_byte = data[-1:]
                return data
            if self._check_replaced() or self._check_truncated():
                continue
            self.stop.wait(self.poll)
        return b""

    def read(self, n: int = -1) -> bytes:
        return self.read1(n if n > 0 else 1 << 16)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _plain(self, head: bytes) -> bytes:
        """The first bytes read of a file, less a UTF-8 byte-order mark; InputError where they
        show a file that is no plain log (``sources.sniff``)."""
        kind = sniff(head)
        if kind == UTF8_BOM:
            return head[3:]
        if kind == TEXT:
            return head
        what = _NOT_PLAIN.get(kind, "UTF-16 text")
        raise InputError(
            f"{self.path}: is {what}; --follow reads a log in UTF-8 as it is written: give the "
            "file to analyze without --follow"
        )

    # -- file changes ----------------------------------------------------------------------------

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            if not self._waiting_noted:
                self._waiting_noted = True
                self.notice(f"waiting for {self.path} to appear")
            return False
        except IsADirectoryError:
            raise OSError(f"{self.path}: is a directory") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(f"{self.path}: not a regular file")
        if self._waiting_noted:
            self.notice(f"{self.path} appeared")
            self._waiting_noted = False
        self.fd = fd
        self.ident = (st.st_dev, st.st_ino)
        self.pos = 0
        return True

    def _check_replaced(self) -> bool:
        """The path names another file now (rotation): finish the old one, open the new one."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False  # renamed away, not yet recreated: keep the old file open
        if (st.st_dev, st.st_ino) == self.ident:
            return False
        assert self.fd is not None
        # Whatever was written to the old file after our last read comes first.
        rest = os.read(self.fd, 1 << 16)
        if rest:
            os.lseek(self.fd, -len(rest), os.SEEK_CUR)
            return True
        self.close()
        self.rotations += 1
        self.notice(f"{self.path} was replaced (rotation); reading the new file")
        self._pending_newline = self._last_byte != b"\n"
        return True

    def _check_truncated(self) -> bool:
        assert self.fd is not None
        size = os.fstat(self.fd).st_size
        if size >= self.pos:
            return False
        os.lseek(self.fd, 0, os.SEEK_SET)
        self.pos = 0
        self.truncations += 1
        self.notice(f"{self.path} was truncated; reading from its start")
        self._pending_newline = self._last_byte != b"\n"
        return True
