"""``TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`` lines of the Rust engine (section 3)."""

from __future__ import annotations

import re

from cuzk_diag.records import Accounting, Event, Family, Value, ascii_int

TIMELINE_PREFIX = "TIMELINE,"

TIMELINE_EVENTS = frozenset(
    {"SYNTH_START", "SYNTH_END", "CHAN_SEND", "GPU_QUEUE", "GPU_PICKUP", "GPU_START", "GPU_END"}
)
_TIMELINE_DETAIL_KEYS = frozenset(
    {"partition", "snap_partition", "worker", "gpu_ms", "synth_ms", "kind", "monolithic"}
)
#: Where another writer's line starts inside a torn TIMELINE line (reference section 3.4).
_INTRUDER_RE = re.compile(r"CUZK_TIMING: |CUZK_NTT_H: |\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def parse_timeline(ln: str, no: int, source: int, acc: Accounting) -> Event | None:
    """Parse a TIMELINE line; None when it is not one whole line (torn)."""
    parts = ln.split(",", 4)
    if len(parts) != 5:
        return None
    _, off, event, job, detail = parts
    if not (off.isascii() and off.isdigit()) or event not in TIMELINE_EVENTS:
        return None
    if "CUZK_" in detail or "CUZK_" in job or "TIMELINE," in detail:
        return None
    if ("Z " in job or "Z " in detail) and _INTRUDER_RE.search(ln, 9) is not None:
        return None  # a tracing line was written into it
    offset = ascii_int(off)
    malformed = offset is None  # (more digits than Python reads as a number)
    fields: dict[str, Value] = {"offset_ms": offset, "job_id": job}
    if detail:
        for kv in detail.split(","):
            k, sep, v = kv.partition("=")
            if not sep:
                if k == "monolithic":
                    fields["monolithic"] = 1
                else:
                    malformed = True
                continue
            if k == "kind":
                fields[k] = v
                continue
            try:
                fields[k] = int(v)
            except ValueError:
                fields[k] = v or None
                malformed = True
            if k not in _TIMELINE_DETAIL_KEYS:
                acc.unknown_keys[k] += 1
    if malformed:
        acc.note_malformed(no)
    return Event(no, source, Family.TIMELINE, event, fields, malformed)


def intruder_at(head: str) -> int | None:
    """Where the line that tore a TIMELINE line starts in it, or None."""
    m = _INTRUDER_RE.search(head, len(TIMELINE_PREFIX))
    return None if m is None else m.start()
