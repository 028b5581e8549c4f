# cython: boundscheck=False, wraparound=False
# (Compiled, the loops index the buffers they are given without checks: every index is within
# the line it reads or the room the caller made for what it writes.)
"""Fixed-form lines read from their bytes, one pass over each line: the C++ prover's lines, the
TIMELINE lines, and the shapes and value pieces of tracing lines.

``columnar`` and ``shapes`` group the lines of a chunk by their printed form and read their
values as columns. The pass that finds each line's form, and its values or the places of its
pieces, is one loop over the line's bytes here (compiled: a C loop over the chunk's buffer;
``timeline_fill`` takes about 120 ns a TIMELINE line, where the Arrow kernels and numpy passes
these loops replace took about 1,000). A loop writes, per line, its form as text (the line
with its values taken out), which the caller numbers with one dictionary encoding, and its
values or their places into columns; no Python object is made per line.

Only the compiled build reads these lines here (``COMPILED``; ``columnar.BULK_SCAN``,
``shapes.ENABLED``): run as Python, a loop over each byte costs more than the per-line
parsers, which then read them (as they read every line in another form, in both builds; the
results are the same).

The loops read the chunk's text as Arrow holds it: ``data`` (its bytes, a memoryview of bytes:
run as Python, a byte read is an ``int``) and ``offs`` (where each line starts; line ``r`` is
``data[offs[r]:offs[r + 1]]``, without its newline).
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

try:
    import cython
except ImportError:  # (run as Python without Cython: ``line_breaks``, which needs it, is not run)
    cython = None

#: This module runs compiled (its file is an extension module, not this source).
COMPILED = not __file__.endswith(".py")
#: (The same, for ``joined`` and ``join_fill``: the tests set ``COMPILED`` to run the loops as
#: Python.)
_LOOPS_COMPILED = COMPILED
#: ``TIMELINE,`` (the prefix every line given to ``timeline_fill`` starts with).
_PREFIX_LEN = 9
#: At most this many words of a TIMELINE detail are read (more cannot be a known form: its
#: keys are seven, none repeated, and a bare ``monolithic``).
DETAIL_WORDS = 8


def line_breaks(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The lines of ``data`` (each ends in a newline, but perhaps the last) as the buffers of an
    Arrow string array: where each line ends among the bytes without the newlines (``offsets``,
    int32, from a 0) and those bytes (uint8). Compiled only (``COMPILED``): the C library's
    ``memchr`` finds each newline and ``memcpy`` copies the line before it, in two passes over
    the chunk (one counts the lines); the pure build's ``classify.line_buffers`` makes the same
    buffers with numpy."""
    lines = _line_fill(data, None, None)
    offsets = np.empty(lines + 1, dtype=np.int32)
    n = len(data)
    text = np.empty(n - lines + (n > 0 and data[n - 1] != 10), dtype=np.uint8)
    offsets[0] = 0
    _line_fill(data, offsets, text)
    return offsets, text


def _line_fill(data: bytes, offs: np.ndarray | None, out: np.ndarray | None) -> int:
    """``line_breaks``' pass over ``data``: its lines counted, and with ``offs`` their ends
    written there (from ``offs[1]``) and their bytes into ``out``."""
    n = len(data)
    if not n:
        return 0
    base = cython.address(data[0])
    o = 0
    p = 0
    i = 0
    while p < n:
        hit = memchr(base + p, 10, n - p)  # type: ignore[name-defined]  # noqa: F821
        q = n if hit == cython.NULL else cython.cast(cython.p_const_uchar, hit) - base
        if offs is not None and out is not None:
            if q > p:
                memcpy(cython.address(out[o]), base + p, q - p)  # type: ignore[name-defined]  # noqa: F821
            o += q - p
            offs[i + 1] = o
        i += 1
        p = q + 1
    return i


def cpp_fill(
    data: memoryview,
    offs: np.ndarray,
    rows: np.ndarray,
    shape: np.ndarray,
    shape_at: np.ndarray,
    vals: np.ndarray,
    odd: np.ndarray,
) -> None:
    """For each line ``rows[i]`` of ``key=<digits>`` words: its text without the digits of its
    values into ``shape`` (from ``shape_at[i]`` to ``shape_at[i + 1]``; ``shape_at[0]`` is
    0), its values into ``vals[i]`` in order (an int64 each), and ``odd[i]`` = 1 when the line
    cannot be in a format string's form: a ``=`` followed by neither a digit nor a lowercase
    ASCII letter, a value of more than 18 digits (more than an int64 holds exactly), or more
    values than ``vals`` has columns; else 2 when a ``=`` is followed by a letter (a word, as
    ``prestage_setup=ok``, which stays in the text: only a form that prints it takes the
    line), else 0.

    A value is the digits right after a ``=``, up to the next byte that is not a digit; every
    other byte (a sign, a unit, a digit of a key, a word) stays in the text, so a line whose
    text is a format string's is in that exact form.
    """
    width = vals.shape[1]
    o = 0
    for i in range(len(rows)):
        r = rows[i]
        a = offs[r]
        b = offs[r + 1]
        nv = 0
        bad = 0
        j = a
        while j < b:
            # The text up to the next "=" (or the line's end) as it is, with the "=" (compiled,
            # found by ``memchr`` and copied by one ``memcpy``).
            e = _next(data, j, b, 61)
            n = e - j + (e < b)
            if _LOOPS_COMPILED:
                memcpy(cython.address(shape[o]), cython.address(data[j]), n)  # type: ignore[name-defined]  # noqa: F821
            else:
                shape[o : o + n] = data[j : j + n]
            o += n
            j = e + 1
            if e == b:
                break
            d = data[j] if j < b else 0
            if d < 48 or d > 57:
                if d < 97 or d > 122:
                    bad = 1  # a "=" without digits or a word
                elif bad == 0:
                    bad = 2  # a word: only a form that prints it is this line's
                continue
            v = 0
            k = 0
            while j < b and 48 <= data[j] <= 57:
                if k < 18:
                    v = v * 10 + (data[j] - 48)
                k += 1
                j += 1
            if k > 18 or nv == width:
                bad = 1
            else:
                vals[i, nv] = v
                nv += 1
        shape_at[i + 1] = o
        odd[i] = bad


def timeline_fill(
    data: memoryview,
    offs: np.ndarray,
    rows: np.ndarray,
    events: np.ndarray,
    event_at: np.ndarray,
    spans: np.ndarray,
    shape: np.ndarray,
    shape_at: np.ndarray,
    vals: np.ndarray,
    good: np.ndarray,
    value_spans: np.ndarray,
) -> None:
    """For each line ``rows[i]`` (``TIMELINE,<offset>,<event>,<job>,<detail>``): in ``spans[i]``
    its event's number among ``events`` (texts from ``event_at[e]`` to ``event_at[e + 1]``),
    its offset, and where its job id starts and ends; or an event number of -1 when the line
    is not whole: fewer than four commas after the prefix, an offset that is not 1-18 ASCII
    digits, an event the engine does not print, another writer's text inside (``CUZK_``,
    ``Z `` or ``TIMELINE,`` anywhere but at its start), or more words in its detail than
    ``vals`` has columns (``DETAIL_WORDS``).

    The detail is words between commas, each a key and, after its first ``=``, a value. The
    keys, each with ``=`` when it has a value, joined by commas, go into ``shape`` (from
    ``shape_at[i]`` to ``shape_at[i + 1]``), each word's value into ``vals[i, w]`` when it is
    a whole number (``-?[0-9]{1,18}``: ``good[i, w]`` = 1) and where its value starts and ends
    into ``value_spans[i, w]`` (-1, -1 for a word without one).
    """
    pre = _PREFIX_LEN
    words = vals.shape[1]
    o = 0
    for i in range(len(rows)):
        r = rows[i]
        a = offs[r]
        b = offs[r + 1]
        shape_at[i + 1] = o
        spans[i, 0] = -1
        # Another writer's text inside the line (the line starts with the prefix: none of
        # them starts at its first byte).
        # Each is looked for by its first letter (compiled, ``memchr`` finds each "Z", "C"
        # and "T": the bytes of a TIMELINE line are mostly digits, lowercase letters and
        # commas); a hit needs a byte after it.
        seen = 0
        j = _next(data, a + 1, b - 1, 90)
        while j < b - 1 and not seen:
            seen = data[j + 1] == 32  # "Z "
            j = _next(data, j + 1, b - 1, 90)
        j = _next(data, a + 1, b - 1, 67)
        while j < b - 1 and not seen:
            seen = j + 5 <= b and _at(data, j, b"CUZK_")
            j = _next(data, j + 1, b - 1, 67)
        j = _next(data, a + 1, b - 1, 84)
        while j < b - 1 and not seen:
            seen = j + 9 <= b and _at(data, j, b"TIMELINE,")
            j = _next(data, j + 1, b - 1, 84)
        if seen:
            continue
        # The three commas after the prefix's, and the offset's digits.
        c2 = a + pre
        off = 0
        while c2 < b and 48 <= data[c2] <= 57:
            if c2 - a < pre + 18:
                off = off * 10 + (data[c2] - 48)
            c2 += 1
        n_digits = c2 - a - pre
        if c2 == b or data[c2] != 44 or n_digits < 1 or n_digits > 18:
            continue
        c3 = c2 + 1
        while c3 < b and data[c3] != 44:
            c3 += 1
        if c3 == b:
            continue
        c4 = c3 + 1
        while c4 < b and data[c4] != 44:
            c4 += 1
        if c4 == b:
            continue
        # The event's number (the texts compared in place: a C function given the buffers
        # cost more than the comparisons).
        event = -1
        for e in range(len(event_at) - 1):
            k = event_at[e]
            if event_at[e + 1] - k != c3 - c2 - 1:
                continue
            m = 0
            while m < c3 - c2 - 1 and events[k + m] == data[c2 + 1 + m]:
                m += 1
            if m == c3 - c2 - 1:
                event = e
                break
        if event < 0:
            continue
        # The detail's words.
        j = c4 + 1
        w = 0
        while True:
            if w == words:
                event = -1
                break
            if w:
                shape[o] = 44  # ","
                o += 1
            while j < b and data[j] != 44 and data[j] != 61:
                shape[o] = data[j]
                o += 1
                j += 1
            value_spans[i, w, 0] = -1
            value_spans[i, w, 1] = -1
            good[i, w] = 0
            vals[i, w] = 0
            if j < b and data[j] == 61:
                shape[o] = 61
                o += 1
                j += 1
                v0 = j
                # A whole number: a minus or none, then 1-18 digits up to the word's end.
                neg = 0
                if j < b and data[j] == 45:  # "-"
                    neg = 1
                    j += 1
                v = 0
                k = j
                while j < b and 48 <= data[j] <= 57:
                    if j - k < 18:
                        v = v * 10 + (data[j] - 48)
                    j += 1
                if j - k >= 1 and j - k <= 18 and (j == b or data[j] == 44):
                    vals[i, w] = -v if neg else v
                    good[i, w] = 1
                while j < b and data[j] != 44:
                    j += 1
                value_spans[i, w, 0] = v0
                value_spans[i, w, 1] = j
            w += 1
            if j == b:
                break
            j += 1  # (past the comma)
        if event < 0:
            o = shape_at[i]
            continue
        spans[i, 0] = event
        spans[i, 1] = off
        spans[i, 2] = c3 + 1
        spans[i, 3] = c4
        shape_at[i + 1] = o


def prefix_fill(data: memoryview, offs: np.ndarray, words: Words, codes: np.ndarray) -> None:
    """For each line ``i`` (``data[offs[i]:offs[i + 1]]``): in ``codes[i]`` bit ``k`` set when
    the line starts with text ``k`` of ``words`` (at most eight; only their bytes are read)."""
    prefix_loop(data, offs, words.text, words.at, codes)


def prefix_loop(
    data: memoryview, offs: np.ndarray, words: np.ndarray, word_at: np.ndarray, codes: np.ndarray
) -> None:
    """``prefix_fill``'s loop: text ``k`` is ``words[word_at[k]:word_at[k + 1]]``."""
    nw = word_at.shape[0] - 1
    for i in range(codes.shape[0]):
        a = offs[i]
        n = offs[i + 1] - a
        c = 0
        if n:
            for k in range(nw):
                s = word_at[k]
                m = word_at[k + 1] - s
                if n < m or data[a] != words[s]:
                    continue
                j = 1
                while j < m and data[a + j] == words[s + j]:
                    j += 1
                if j == m:
                    c |= 1 << k
        codes[i] = c


def _at(data: memoryview, j: int, word: bytes) -> bool:
    """``data`` holds ``word`` from ``j`` on (the caller has checked there is room)."""
    for k in range(len(word)):
        if data[j + k] != word[k]:
            return False
    return True


def buffers(
    texts_: pa.StringArray, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bytes of a string array's texts, where each text starts (and the last ends), and
    ``rows`` as the contiguous int64 the loops read (none when not given: every text is read
    by its offsets)."""
    if rows is None:
        rows = _NO_ROWS
    _, bounds, text = texts_.buffers()
    offs = np.frombuffer(bounds, dtype=np.int32, count=len(texts_) + 1, offset=texts_.offset * 4)
    data = np.frombuffer(text, dtype=np.uint8) if text is not None else np.zeros(0, np.uint8)
    return data, offs, np.ascontiguousarray(rows, dtype=np.int64)


def texts(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.StringArray:
    """The texts ``data[starts[i]:ends[i]]`` as a string array (whole UTF-8: each starts and
    ends at a character's first byte of a UTF-8 text, or at its end). ``starts`` and ``ends``
    are int64, as they lie (a column of a larger array: read in place, not copied)."""
    n = len(starts)
    out = np.empty(int(ends.sum()) - int(starts.sum()), dtype=np.uint8)
    at = np.empty(n + 1, dtype=np.int32)
    _copy(data.data, starts, ends, out, at)
    texts_: pa.StringArray = pa.StringArray.from_buffers(n, pa.py_buffer(at), pa.py_buffer(out))
    return texts_


def _copy(
    data: memoryview, starts: np.ndarray, ends: np.ndarray, out: np.ndarray, at: np.ndarray
) -> None:
    """``data[starts[i]:ends[i]]`` one after another into ``out``, text ``i`` from ``at[i]``
    to ``at[i + 1]``."""
    o = 0
    at[0] = 0
    for i in range(len(starts)):
        j = starts[i]
        k = ends[i] - j
        if k > 0:
            # (One ``memcpy`` a text compiled, where a loop took a byte at a time.)
            if _LOOPS_COMPILED:
                memcpy(cython.address(out[o]), cython.address(data[j]), k)  # type: ignore[name-defined]  # noqa: F821
            else:
                out[o : o + k] = data[j : j + k]
            o += k
        at[i + 1] = o


class Words:
    """Texts to look for anywhere in a line, in the form ``tracing_fill`` searches by
    (Wu-Manber, on blocks of two bytes): every window of ``shortest`` bytes is tested at its
    last two bytes, ``shift[k]`` bytes are skipped where those two bytes, ``k`` (the first
    plus 256 times the second), end no window-long start of any text sooner; at a shift of 0
    the texts whose window-long start ends in ``k`` (``tails``) are compared whole. A line
    of ordinary text is passed by about ``shortest`` bytes a test."""

    def __init__(self, words: list[str]) -> None:
        raw = [w.encode("utf-8") for w in words]
        if not raw or min(map(len, raw)) < 2:
            raise ValueError("each text must be at least two bytes long")
        m = min(map(len, raw))
        shift = np.full(1 << 16, m - 1, dtype=np.int64)
        for w in raw:
            for q in range(1, m):  # (q: where a block of two ends in the window)
                k = w[q - 1] | w[q] << 8
                shift[k] = min(int(shift[k]), m - 1 - q)
        self.shortest = m
        self.shift = shift
        self.text = np.frombuffer(b"".join(raw), dtype=np.uint8)
        self.at = np.cumsum([0] + [len(w) for w in raw], dtype=np.int64)
        self.tails = np.array([w[m - 2] | w[m - 1] << 8 for w in raw], dtype=np.int64)


def tracing_fill(
    data: memoryview,
    offs: np.ndarray,
    rows: np.ndarray,
    shortest: int,
    shift: np.ndarray,
    words: np.ndarray,
    word_at: np.ndarray,
    tails: np.ndarray,
    heads: np.ndarray,
    relevant: np.ndarray,
    search: bool = True,
) -> None:
    """For each line ``rows[i]``: ``heads[i]`` = 1 when it starts with a tracing line's
    header (``classify.TRACING_HEAD_RE2``: a timestamp, spaces, a level and a space), and,
    with ``search``, ``relevant[i]`` = 1 when it has one and its level is WARN or ERROR, or
    one of the texts of a ``Words`` (``shortest``, ``shift``, ``words``, ``word_at``,
    ``tails``) is anywhere in it."""
    nw = len(word_at) - 1
    for i in range(len(rows)):
        r = rows[i]
        a = offs[r]
        b = offs[r + 1]
        level = _level(data, a, b)
        heads[i] = level != 0
        if not search:
            continue
        if level != 1:
            relevant[i] = level == 2
            continue
        found = 0
        e = a + shortest - 1
        while e < b:
            k = data[e - 1] | (data[e] << 8)
            s = shift[k]
            if s:
                e += s
                continue
            st = e - shortest + 1
            for w in range(nw):
                if tails[w] != k:
                    continue
                wa = word_at[w]
                n = word_at[w + 1] - wa
                if st + n > b:
                    continue
                j = 0
                while j < n and data[st + j] == words[wa + j]:
                    j += 1
                if j == n:
                    found = 1
                    break
            if found:
                break
            e += 1
        relevant[i] = found


def _level(data: memoryview, a: int, b: int) -> int:
    """The level of the tracing header ``data[a:b]`` starts with: 2 for WARN or ERROR, 1 for
    TRACE, DEBUG or INFO, 0 without a header (``classify.TRACING_HEAD_RE2``: ``YYYY-MM-DDThh:mm:ss``
    in ASCII digits, ``.`` and digits or nothing, ``Z`` or a sign, two digits, a colon or
    nothing and two digits; then spaces, the level and a space)."""
    if b - a < 20:
        return 0
    # (The separators first, then the digits: ``c ^ 48`` is 0-9 for an ASCII digit alone; a
    # position is asked which it is only where its byte is no digit.)
    if (
        data[a + 4] != 45  # "-"
        or data[a + 7] != 45
        or data[a + 10] != 84  # "T"
        or data[a + 13] != 58  # ":"
        or data[a + 16] != 58
    ):
        return 0
    for k in range(19):
        if data[a + k] ^ 48 > 9 and k != 4 and k != 7 and k != 10 and k != 13 and k != 16:
            return 0
    j = a + 19
    if data[j] == 46:  # "."
        j += 1
        if not _digits(data, j, b, 1):
            return 0
        while j < b and 48 <= data[j] <= 57:
            j += 1
    if j >= b:
        return 0
    c = data[j]
    j += 1
    if c == 43 or c == 45:  # "+" or "-"
        if not _digits(data, j, b, 2):
            return 0
        j += 2
        if j < b and data[j] == 58:  # ":"
            j += 1
        if not _digits(data, j, b, 2):
            return 0
        j += 2
    elif c != 90:  # "Z"
        return 0
    k = j
    while j < b and data[j] == 32:
        j += 1
    if j == k:
        return 0
    if j >= b:
        return 0
    c = data[j]
    if c == 73 and j + 5 <= b and _at(data, j, b"INFO "):
        return 1
    if c == 68 and j + 6 <= b and _at(data, j, b"DEBUG "):
        return 1
    if c == 87 and j + 5 <= b and _at(data, j, b"WARN "):
        return 2
    if c == 69 and j + 6 <= b and _at(data, j, b"ERROR "):
        return 2
    if c == 84 and j + 6 <= b and _at(data, j, b"TRACE "):
        return 1
    return 0


def _digits(data: memoryview, j: int, b: int, n: int) -> bool:
    """``data[j:j + n]`` is ``n`` ASCII digits before ``b``."""
    if j + n > b:
        return False
    for k in range(j, j + n):
        if data[k] < 48 or data[k] > 57:
            return False
    return True


def tracing_shape_fill(
    data: memoryview,
    offs: np.ndarray,
    rows: np.ndarray,
    shape: np.ndarray,
    shape_at: np.ndarray,
    spaces: np.ndarray,
    space_at: np.ndarray,
) -> None:
    """For each tracing line ``rows[i]``: its text after its first space with each value after
    a ``=`` taken out (the ``=`` stays) into ``shape`` (from ``shape_at[i]`` to
    ``shape_at[i + 1]``): its printed shape (``shapes``). A value is a quoted text up to its
    closing quote, or else the text up to a space or a brace (``=(?:"[^"]*"|[^ {}]*)``, each
    match from where the one before ended). The same pass writes where each of the line's
    spaces stands (quoted or not) into ``spaces`` (from ``space_at[i]`` to ``space_at[i + 1]``):
    the ends of its words, which ``cut_fill`` reads (room: a place per byte of the lines)."""
    o = 0
    p = 0
    for i in range(len(rows)):
        r = rows[i]
        a = offs[r]
        b = offs[r + 1]
        j = _next(data, a, b, 32)
        if j < b:
            spaces[p] = j
            p += 1
        j += 1
        while j < b:
            # The text up to the next "=" (or the line's end) as it is, with the "=", and the
            # spaces in it (compiled, ``memchr`` finds each and ``memcpy`` copies the run).
            e = _next(data, j, b, 61)
            n = e - j + (e < b)
            if _LOOPS_COMPILED:
                memcpy(cython.address(shape[o]), cython.address(data[j]), n)  # type: ignore[name-defined]  # noqa: F821
            else:
                shape[o : o + n] = data[j : j + n]
            o += n
            k = _next(data, j, e, 32)
            while k < e:
                spaces[p] = k
                p += 1
                k = _next(data, k + 1, e, 32)
            j = e + 1
            if e == b:
                break
            if j < b and data[j] == 34:  # '"': to the closing quote, if there is one
                q = p  # (the spaces inside: kept only if the quote closes)
                k = j + 1
                while k < b and data[k] != 34:
                    if data[k] == 32:
                        spaces[q] = k
                        q += 1
                    k += 1
                if k < b:
                    p = q
                    j = k + 1
                    continue
            while j < b and data[j] != 32 and data[j] != 123 and data[j] != 125:
                j += 1
        shape_at[i + 1] = o
        space_at[i + 1] = p


def _next(data: memoryview, j: int, b: int, c: int) -> int:
    """Where the first byte ``c`` of ``data[j:b]`` stands, or ``b`` (compiled, by the C
    library's ``memchr``)."""
    if j >= b:
        return b
    if _LOOPS_COMPILED:
        base = cython.address(data[0])
        hit = memchr(base + j, c, b - j)  # type: ignore[name-defined]  # noqa: F821
        return b if hit == cython.NULL else cython.cast(cython.p_const_uchar, hit) - base
    while j < b and data[j] != c:
        j += 1
    return j


#: The classes of value a tracing shape's plan reads (``shapes``), as ``cut_fill`` checks them:
#: none (a piece taken as it is: a timestamp, the spans), a whole number (``-?[0-9]{1,18}``:
#: what a cast to int64 takes exactly as int() does), one in ``Some(...)``, a quoted text and a
#: plain text (of ``[!#-z|~]``, printable ASCII but space, quote and braces, that the per-line
#: parser keeps as it is: not a number, ``None`` or ``Some(...)``).
CUT_PIECE, CUT_INT, CUT_SOME, CUT_QUOTED, CUT_TEXT = range(5)


def cut_fill(
    data: memoryview,
    offs: np.ndarray,
    rows: np.ndarray,
    spaces: np.ndarray,
    space_at: np.ndarray,
    at: np.ndarray,
    words: int,
    cuts: np.ndarray,
    spans: np.ndarray,
    fit: np.ndarray,
    classes: np.ndarray,
    vals: np.ndarray,
) -> None:
    """For each line ``rows[i]``, split at each space into words (its spaces as
    ``tracing_shape_fill`` wrote them: ``spaces``, from ``space_at[at[i]]`` to
    ``space_at[at[i] + 1]``): where the piece of each cut ``cuts[f]`` (``shapes.Cut``: from
    ``a`` characters into word ``first`` to ``b`` characters before the end of word ``last``)
    starts and ends, into ``spans[i, f]`` (empty when those characters overlap), and ``fit[i]``
    = 1; ``fit[i]`` = 0 when the line has another number of words than ``words``, or a piece
    is not of its class (``classes[f]``, one of ``CUT_*``). The value of a whole number
    (``CUT_INT``, ``CUT_SOME``) goes into ``vals[i, f]``; the span of a quoted text is the text
    inside its quotes."""
    for i in range(len(rows)):
        r = rows[i]
        a = offs[r]
        b = offs[r + 1]
        w0 = space_at[at[i]]  # (word n starts after space w0 + n - 1, ends at space w0 + n)
        fit[i] = 0
        if space_at[at[i] + 1] - w0 != words - 1:
            continue
        for f in range(cuts.shape[0]):
            s = a if cuts[f, 0] == 0 else spaces[w0 + cuts[f, 0] - 1] + 1
            e = b if cuts[f, 1] == words - 1 else spaces[w0 + cuts[f, 1]]
            # ``a`` characters in, ``b`` before the end: as many bytes where those are ASCII
            # (a key's text, mostly), else a character at a time (a byte and its continuation
            # bytes).
            n = cuts[f, 2]
            if s + n <= e and _ascii(data, s, s + n):
                s += n
            else:
                k = 0
                while k < n and s < e:
                    s += 1
                    while s < e and (data[s] & 0xC0) == 0x80:
                        s += 1
                    k += 1
            n = cuts[f, 3]
            if e - n >= s and _ascii(data, e - n, e):
                e -= n
            else:
                k = 0
                while k < n and e > s:
                    e -= 1
                    while e > s and (data[e] & 0xC0) == 0x80:
                        e -= 1
                    k += 1
            cls = classes[f]  # (compared as numbers: compiled, the names are Python objects)
            if cls == 1 or cls == 2:  # CUT_INT, CUT_SOME
                if cls == 2:
                    if not _some(data, s, e):
                        break
                    s += 5
                    e -= 1
                neg = s < e and data[s] == 45  # "-"
                j = s + 1 if neg else s
                if e - j < 1 or e - j > 18:
                    break
                v = 0
                while j < e:
                    c = data[j]
                    if c < 48 or c > 57:
                        break
                    v = v * 10 + (c - 48)
                    j += 1
                if j < e:
                    break
                vals[i, f] = -v if neg else v
            elif cls == 3:  # CUT_QUOTED
                if (
                    e - s < 2
                    or data[s] != 34
                    or data[e - 1] != 34
                    or not _plain(data, s + 1, e - 1)
                ):
                    break
                s += 1
                e -= 1
            elif cls == 4:  # CUT_TEXT
                if not _plain(data, s, e) or _not_text(data, s, e):
                    break
            spans[i, f, 0] = s
            spans[i, f, 1] = e
        else:
            fit[i] = 1


def _ascii(data: memoryview, s: int, e: int) -> bool:
    """Are bytes ``s`` to ``e`` each ASCII? (Every byte read: no branch per byte.)"""
    seen = 0
    for j in range(s, e):
        seen |= data[j]
    return seen < 0x80


def _plain(data: memoryview, s: int, e: int) -> bool:
    """Are bytes ``s`` to ``e`` each one of ``[!#-z|~]`` (printable ASCII but space, quote and
    braces)?"""
    for j in range(s, e):
        c = data[j]
        if not (c == 33 or 35 <= c <= 122 or c == 124 or c == 126):
            return False
    return True


def _some(data: memoryview, s: int, e: int) -> bool:
    """Do bytes ``s`` to ``e`` read ``Some(`` and end in ``)``?"""
    return (
        e - s >= 6
        and data[s] == 83  # S
        and data[s + 1] == 111  # o
        and data[s + 2] == 109  # m
        and data[s + 3] == 101  # e
        and data[s + 4] == 40  # (
        and data[e - 1] == 41  # )
    )


def _not_text(data: memoryview, s: int, e: int) -> bool:
    """Do bytes ``s`` to ``e`` read as what the per-line parser does not keep as a text: a
    number (``-?[0-9]+``), ``None`` or ``Some(...)``?"""
    if _some(data, s, e):
        return True
    if (
        e - s == 4
        and data[s] == 78  # N
        and data[s + 1] == 111  # o
        and data[s + 2] == 110  # n
        and data[s + 3] == 101  # e
    ):
        return True
    j = s + 1 if s < e and data[s] == 45 else s  # "-"
    if j >= e:
        return False
    while j < e:
        if data[j] < 48 or data[j] > 57:
            return False
        j += 1
    return True


def json_escaped(data: memoryview) -> bool:
    """Is a byte of ``data`` one that JSON escapes in a string (a quote, a backslash, a
    control character)? Every byte read, no branch per byte (in the pure build the caller
    asks numpy: a loop run as Python would be far slower)."""
    seen = 0
    for j in range(len(data)):
        c = data[j]
        seen |= (c < 32) | (c == 34) | (c == 92)
    return seen != 0


def join_rows(pieces: list[str | pa.Array], n: int) -> pa.Array:
    """For each of ``n`` rows, its texts of ``pieces`` one after another: a ``str`` is the same
    in every row, an integer column's value is written in decimal, a string column's value as it
    is; a row with a null is null. By ``joined``'s loop where it runs, else by kernels (each
    integer column cast to text, then ``binary_join_element_wise``)."""
    text = joined(pieces, n)
    if text is not None:
        return text
    cast = [
        pc.cast(p, pa.string()) if isinstance(p, pa.Array) and pa.types.is_integer(p.type) else p
        for p in pieces
    ]
    out: pa.Array = pc.binary_join_element_wise(*cast, "")
    return out


def joined(pieces: list[str | pa.Array], n: int) -> pa.StringArray | None:
    """For each of ``n`` rows, its texts of ``pieces`` one after another: a ``str`` is the same
    in every row, an integer column's value is written in decimal, a string column's value as it
    is (``join_fill``, one loop over the rows: the kernels it replaces, a cast of each integer
    column and ``binary_join_element_wise``, cost several times as much). None where the loop
    does not run (the pure build, a column with a null or of another type, or 2 GiB of text)."""
    if not COMPILED:
        return None
    consts = bytearray()
    const_at = [0]
    kinds: list[int] = []
    col_of: list[int] = []
    ints: list[pa.Array] = []
    strings: list[pa.Array] = []
    for piece in pieces:
        if isinstance(piece, str):
            consts += piece.encode("utf-8")
            kinds.append(0)
            col_of.append(0)
        elif piece.null_count or len(piece) != n:
            return None
        elif pa.types.is_int64(piece.type):
            kinds.append(1)
            col_of.append(len(ints))
            ints.append(piece)
        elif pa.types.is_string(piece.type):
            kinds.append(2)
            col_of.append(len(strings))
            strings.append(piece)
        else:
            return None
        const_at.append(len(consts))
    from cuzk_diag.ingest.parse.classify import numbers  # (classify imports this module)

    values = np.empty((n, len(ints)), dtype=np.int64)
    for k, col in enumerate(ints):
        values[:, k] = numbers(col)
    text_at = np.empty((len(strings), n + 1), dtype=np.int64)
    # (The texts of every row first, at ``const_at``, then the string columns' texts.)
    parts: list[np.ndarray] = [np.frombuffer(bytes(consts), dtype=np.uint8)]
    base = len(consts)
    for k, col in enumerate(strings):
        data, at, _ = buffers(col)
        first, last = int(at[0]), int(at[n])
        parts.append(data[first:last])
        text_at[k] = at - first + base
        base += last - first
    text_data = np.concatenate(parts)
    # (Each row: its texts, an int64 in decimal in 20 bytes at most, its string values.)
    size = n * len(consts) + n * len(ints) * 20 + base - len(consts)
    if size >= 1 << 31:
        return None  # (more than a string array's 32-bit offsets reach)
    out = np.empty(size, dtype=np.uint8)
    out_at = np.zeros(n + 1, dtype=np.int32)
    join_fill(
        np.array(const_at, dtype=np.int64),
        np.array(kinds, dtype=np.uint8),
        np.array(col_of, dtype=np.int64),
        # (Run as Python, the values as ints: a numpy int64's magnitude can overflow.)
        values if _LOOPS_COMPILED else values.astype(object),
        text_data,
        text_at,
        _PAIRS,
        out,
        out_at,
    )
    texts_: pa.StringArray = pa.StringArray.from_buffers(
        n, pa.py_buffer(out_at), pa.py_buffer(out[: int(out_at[n])])
    )
    return texts_


def join_fill(
    const_at: np.ndarray,
    kinds: np.ndarray,
    col_of: np.ndarray,
    ints: np.ndarray,
    text_data: np.ndarray,
    text_at: np.ndarray,
    pairs: np.ndarray,
    out: np.ndarray,
    out_at: np.ndarray,
) -> None:
    """Row ``i`` of ``joined`` into ``out`` (from ``out_at[i]`` to ``out_at[i + 1]``): for each
    piece ``p``, the text ``text_data[const_at[p]:const_at[p + 1]]``, the same in every row
    (``kinds[p]`` 0), the value ``ints[i, col_of[p]]`` in decimal (1), or the text
    ``text_data[text_at[c, i]:text_at[c, i + 1]]`` of ``c = col_of[p]`` (2). ``pairs``: the
    digits of 0 to 99, two bytes each."""
    o = 0
    for i in range(out_at.shape[0] - 1):
        for p in range(kinds.shape[0]):
            kind = kinds[p]
            if kind == 1:
                v = ints[i, col_of[p]]
                if v < 0:
                    out[o] = 45  # "-"
                    o += 1
                    u = -(v + 1)  # (the magnitude less one: no overflow at the least int64)
                    u += 1
                else:
                    u = v
                # Its digits, two at a time (``pairs``), from the last.
                t = u
                nd = 1
                while t >= 100:
                    t //= 100
                    nd += 2
                if t >= 10:
                    nd += 1
                k = o + nd
                while u >= 100:
                    t = (u % 100) * 2
                    u //= 100
                    out[k - 1] = pairs[t + 1]
                    out[k - 2] = pairs[t]
                    k -= 2
                if u >= 10:
                    out[k - 1] = pairs[u * 2 + 1]
                    out[k - 2] = pairs[u * 2]
                else:
                    out[k - 1] = 48 + u
                o += nd
                continue
            if kind == 0:
                j = const_at[p]
                k = const_at[p + 1] - j
            else:
                c = col_of[p]
                j = text_at[c, i]
                k = text_at[c, i + 1] - j
            if k:
                # (One ``memcpy`` a text compiled, where a loop took a byte at a time.)
                if _LOOPS_COMPILED:
                    memcpy(cython.address(out[o]), cython.address(text_data[j]), k)  # type: ignore[name-defined]  # noqa: F821
                else:
                    out[o : o + k] = text_data[j : j + k]
                o += k
        out_at[i + 1] = o


class TextGather:
    """The texts of a column made of pieces one after another (each an array of ``sizes[k]``
    texts, a ``str`` that each of its ``sizes[k]`` rows holds, or None for that many nulls),
    its rows in the order ``order`` (positions in that column; None: as they are): what
    ``pa.concat_arrays`` and then ``take`` give, but each text copied once, from its piece, by
    one loop (``gather_fill``), and no column made of a ``str`` piece. Made once for the
    columns of one order (``texts``)."""

    def __init__(self, sizes: list[int], order: np.ndarray | None) -> None:
        self.sizes = sizes
        self.given = order
        # (Where each row comes from, made for the first column: the pure build makes none.)
        self.made: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The order as int64, each position's piece and each piece's first position."""
        if self.made is None:
            sizes, order = self.sizes, self.given
            count = int(sum(sizes))
            first = np.zeros(len(sizes), dtype=np.int64)
            np.cumsum(np.array(sizes[:-1], dtype=np.int64), out=first[1:])
            self.made = (
                np.arange(count, dtype=np.int64)
                if order is None
                else np.ascontiguousarray(order, dtype=np.int64),
                np.repeat(np.arange(len(sizes), dtype=np.int64), sizes),
                first,
            )
        return self.made

    def texts(self, pieces: list[pa.Array | str | None]) -> pa.StringArray | None:
        """The column of ``pieces``; None where the loop does not run (the pure build, a piece
        of another type or size, or 2 GiB of text)."""
        if not COMPILED:
            return None
        count = len(pieces)
        step = np.ones(count, dtype=np.int64)
        nulls = np.zeros(count, dtype=np.uint8)  # 0: none, 1: every row, 2: by its bitmap
        bits_off = np.zeros(count, dtype=np.int64)
        # Per piece, where its text offsets, its bytes and its validity bits lie (the
        # buffers' own addresses: no array made to read them), and, run as Python, the same
        # as numpy arrays (``held``). ``keep`` holds the buffers made here while the loop runs.
        where: list[tuple[int, int, int]] = []
        held: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        keep: list[pa.Buffer] = []
        room = 0
        for k, (piece, size) in enumerate(zip(pieces, self.sizes, strict=True)):
            if piece is None:
                step[k], nulls[k] = 0, 1
                at_buf, data_buf, bits_buf = _NO_TEXT, _NO_TEXT, None
            elif isinstance(piece, str):
                text = piece.encode("utf-8")
                step[k] = 0
                at_buf = pa.py_buffer(_TEXT_AT.pack(0, len(text)))
                data_buf, bits_buf = (pa.py_buffer(text) if text else _NO_TEXT), None
                keep += (at_buf, data_buf)
                room += size * len(text)
            elif isinstance(piece, pa.StringArray) and len(piece) == size:
                bits_buf, at_buf, data_buf = piece.buffers()
                first = piece.offset
                lo, hi = (_INT32.unpack_from(at_buf, 4 * (first + e))[0] for e in (0, size))
                room += hi - lo
                if data_buf is None or not data_buf.size:
                    data_buf = _NO_TEXT
                if piece.null_count:
                    nulls[k], bits_off[k] = 2, first
                else:
                    bits_buf = None
                at_buf = at_buf.slice(4 * first)
            else:
                return None
            where.append(
                (at_buf.address, data_buf.address, 0 if bits_buf is None else bits_buf.address)
            )
            if not _LOOPS_COMPILED:
                held.append(
                    (
                        np.frombuffer(at_buf, dtype=np.int32, count=size + 1 if step[k] else 2),
                        np.frombuffer(data_buf, dtype=np.uint8),
                        None if bits_buf is None else np.frombuffer(bits_buf, dtype=np.uint8),
                    )
                )
        if room >= 1 << 31:
            return None  # (more than a string array's 32-bit offsets reach)
        order, which, first = self._rows()
        n = len(order)
        out = np.empty(room, dtype=np.uint8)
        out_at = np.empty(n + 1, dtype=np.int32)
        valid = np.zeros((n + 7) // 8, dtype=np.uint8)
        addresses = np.array(where, dtype=np.int64).reshape(count, 3)
        missing = gather_fill(
            order,
            which,
            first,
            step,
            nulls,
            bits_off,
            addresses,
            held,
            out,
            out_at,
            valid,
        )
        bitmap = pa.py_buffer(valid) if missing else None
        texts_: pa.StringArray = pa.StringArray.from_buffers(
            n, pa.py_buffer(out_at), pa.py_buffer(out[: int(out_at[n])]), bitmap, missing
        )
        return texts_


#: No rows (``buffers`` of a whole array).
_NO_ROWS = np.zeros(0, dtype=np.int64)

#: The decimal digits of 0 to 99, two bytes each (``join_fill``).
_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8)

#: ``TextGather``: a piece's offsets and a text offset (int32); an empty text (two zero offsets:
#: a row of a piece of nulls; and, as its bytes, a buffer to point at but not read).
_TEXT_AT = struct.Struct("<ii")
_INT32 = struct.Struct("<i")
_NO_TEXT = pa.py_buffer(bytes(8))


def gather_fill(
    order: np.ndarray,
    which: np.ndarray,
    first: np.ndarray,
    step: np.ndarray,
    nulls: np.ndarray,
    bits_off: np.ndarray,
    addresses: np.ndarray,
    held: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]],
    out: np.ndarray,
    out_at: np.ndarray,
    valid: np.ndarray,
) -> int:
    """Row ``r`` of ``TextGather.texts``: row ``i`` of piece ``k``, where ``order[r]`` is
    ``first[k] + i`` (``which`` names ``k``; ``i`` is 0 in a piece of one text, ``step`` 0):
    its text (from ``at[i]`` to ``at[i + 1]`` of the piece's ``data``; compiled, read at
    ``addresses[k]``: ``at``, ``data``, the validity bits) into ``out`` from ``out_at[r]``, and
    its bit in ``valid`` set unless it is null (``nulls[k]``: 0 none, 1 every row, 2 by the
    piece's bits from ``bits_off[k]``). The number of nulls."""
    o = 0
    missing = 0
    out_at[0] = 0
    for r in range(order.shape[0]):
        g = order[r]
        k = which[g]
        i = (g - first[k]) * step[k]
        ok = nulls[k] == 0
        if nulls[k] == 2:
            j = bits_off[k] + i
            if _LOOPS_COMPILED:
                ok = (cython.cast(cython.p_const_uchar, addresses[k, 2])[j >> 3] >> (j & 7)) & 1
            else:
                ok = (int(held[k][2][j >> 3]) >> (j & 7)) & 1
        if ok:
            if _LOOPS_COMPILED:
                s = cython.cast(cython.p_const_int, addresses[k, 0])[i]
                e = cython.cast(cython.p_const_int, addresses[k, 0])[i + 1]
                if e > s:
                    memcpy(  # type: ignore[name-defined]  # noqa: F821
                        cython.address(out[o]),
                        cython.cast(cython.p_const_uchar, addresses[k, 1]) + s,
                        e - s,
                    )
            else:
                s = held[k][0][i]
                e = held[k][0][i + 1]
                out[o : o + e - s] = held[k][1][s:e]
            o += e - s
            valid[r >> 3] |= 1 << (r & 7)
        else:
            missing += 1
        out_at[r + 1] = o
    return missing
