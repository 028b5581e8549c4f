"""Log text is untrusted: neutralise it before it reaches a report.

A log line can hold anything a process printed, including text aimed at whatever displays the
report: GitHub Actions executes a stdout line that starts with ``::`` (``::error::``,
``::add-mask::``, ...) or holds ``##[``, terminals obey control characters, Markdown renders HTML
and links. Two layers keep reports safe:

- :func:`neutralise`, applied where log text enters a report model (a finding's message,
  evidence and advice; the fact and accounting rows; the JSON report). It makes control
  characters visible (``\\x07``), and puts a zero-width space into every ``::`` and ``##[`` so
  that no way of wrapping the text can start a line with ``::`` and no line contains ``##[``.
  It is idempotent.
- Escaping for the format at the edge: :func:`md_text` and :func:`md_code` for Markdown (the
  ``--format markdown`` report, the job summary, ``compare``'s table); the GitHub reporter's
  ``%``-escaping of command data; XML escaping in JUnit.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import IO, Any

from cuzk_diag.factrows import FactRows, KeyedFactRows, plain_rows

#: Zero-width space: breaks ``::`` and ``##[`` without changing how the text reads.
ZWSP = "\u200b"

#: DEL, C1 controls, line/paragraph separators and bidirectional embedding, override and
#: isolate marks (which can make text read differently from what it is): the controls besides
#: C0's, which JSON text shows as they are (``_RAW_CONTROL_RE``).
_OTHER_CONTROLS = "\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: C0 controls and the others.
_CONTROL_RE = re.compile(f"[\x00-\x1f{_OTHER_CONTROLS}]")
#: A colon followed by a colon; a ``#`` that starts ``##[``.
_COMMAND_RE = re.compile(r":(?=:)|#(?=#\[)")
#: Characters with a meaning in (GitHub-flavoured) Markdown or HTML, escaped with a backslash.
_MD_SPECIAL_RE = re.compile(r"[\\`*_\[\](){}<>!|#~&@+\-=]")
_BACKTICKS_RE = re.compile(r"`+")

_SPACES = {"\t": " ", "\n": " "}


def _control(m: re.Match[str]) -> str:
    c = m.group()
    if c in _SPACES:
        return _SPACES[c]
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def neutralise(text: str) -> str:
    """``text`` with controls made visible and workflow-command markers broken."""
    if text.isprintable() and "::" not in text and "##[" not in text:
        return text  # the common case: nothing to do
    text = _CONTROL_RE.sub(_control, text)
    return _COMMAND_RE.sub(lambda m: m.group() + ZWSP, text)


def neutralise_value(value: Any) -> Any:
    """:func:`neutralise` every string in a JSON-like value (dict keys included); tuples become
    lists. A dict or list in which nothing changes is given back as it is, not copied: the JSON
    report of a long log holds the run facts of tens of thousands of jobs, nearly always clean.
    """
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, FactRows | KeyedFactRows):
        # (Rows of facts, as plain dicts and lists only when something in them changes: the
        # JSON report asks only for rows whose text shows something to neutralise.)
        plain = plain_rows(value)
        out = neutralise_value(plain)
        return value if out is plain else out
    if isinstance(value, dict):
        new: dict[Any, Any] | None = None
        for i, (k, v) in enumerate(value.items()):
            k2, v2 = neutralise_value(k), neutralise_value(v)
            if new is None and (k2 is not k or v2 is not v):
                new = dict(islice(value.items(), i))  # the items before the first change
            if new is not None:
                new[k2] = v2
        return value if new is None else new
    if isinstance(value, list | tuple):
        out = [neutralise_value(v) for v in value]
        same = type(value) is list and all(a is b for a, b in zip(out, value, strict=True))
        return value if same else out
    return value


#: The characters of ``_CONTROL_RE`` that JSON text shows as they are (the encoder writes
#: U+0000-U+001F as escapes, with a backslash).
_RAW_CONTROL_RE = re.compile(f"[{_OTHER_CONTROLS}]")


def json_text_is_clean(text: str) -> bool:
    """Whether the JSON text of a value (``json.dumps``, any layout) shows that
    :func:`neutralise_value` leaves every string in it as it is: no escaped character (a
    backslash anywhere: a control character, but also a quote or a backslash of the text, so a
    "no" may be wrong, a "yes" never), no other control character, no ``::`` and no ``##[``. A
    search of the text in C, where :func:`neutralise_value` takes a step per value."""
    if "\\" in text or "::" in text or "##[" in text:
        return False
    if text.isascii():
        return "\x7f" not in text  # (DEL, the one control above C0's in ASCII)
    return _RAW_CONTROL_RE.search(text) is None


def write_neutralised_json(doc: Any, stream: IO[str], **options: Any) -> None:
    """Write the indented JSON text of :func:`neutralise_value` of ``doc``
    (``jsontext.indented_parts``, ``options`` as its) in one pass: each piece of text is looked
    at as it is made (:func:`json_text_is_clean`), and only a value whose piece shows something
    to neutralise is neutralised, not every value of a long log's report."""
    from cuzk_diag.jsontext import indented_parts

    for part in indented_parts(doc, clean=(json_text_is_clean, neutralise_value), **options):
        stream.write(part)


def md_text(text: str) -> str:
    """Neutralised text escaped for inline Markdown (also safe in a table cell)."""
    return _MD_SPECIAL_RE.sub(lambda m: "\\" + m.group(), neutralise(text))


def md_code(text: str, *, cell: bool = False) -> str:
    """Neutralised text as an inline code span; ``cell``: inside a table cell."""
    text = neutralise(text)
    if cell:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in _BACKTICKS_RE.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"
