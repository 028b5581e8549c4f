"""``CUZK_TIMING:`` and ``CUZK_NTT_H:`` lines of the C++ prover (reference sections 1.2, T1-T19)."""

from __future__ import annotations

import re
import sys

from cuzk_diag.records import Accounting, Event, Family, Value

TIMING_PREFIX = "CUZK_TIMING: "
NTT_H_PREFIX = "CUZK_NTT_H: "

#: The integers of ``prestage_setup=ok`` (T12a), and the stage times V5 prints after them (T12b).
PRESTAGE_OK = ("domain", "lot_of_memory")
PRESTAGE_TIMES = ("sync_ms", "trim_ms", "alloc_ms", "upload_ms", "total_ps_ms")

#: kind -> the keys its format string prints. Other keys are kept and counted as unknown.
TIMING_KEYS: dict[str, frozenset[str]] = {
    "split_vectors": frozenset({"split_vectors_ms", "setup_to_split_ms"}),
    "prep_msm": frozenset({"prep_msm_ms"}),
    "b_g2_msm": frozenset({"b_g2_msm_ms", "num_circuits"}),
    "ntt_msm_h": frozenset({"gpu_tid", "ntt_msm_h_ms"}),
    "batch_add": frozenset({"gpu_tid", "batch_add_ms"}),
    "tail_msm": frozenset({"gpu_tid", "tail_msm_ms", "gpu_total_ms"}),
    "barrier_wait": frozenset({"gpu_tid", "barrier_wait_ms"}),
    "epilogue": frozenset({"epilogue_ms", "pre_destructor_ms"}),
    "async_dealloc": frozenset({"async_dealloc_ms"}),
    "host_register": frozenset({"host_register", "err"}),
    "prestage_vram": frozenset(
        {"free_mib", "usable_mib", "need_da_mib", "need_dbc_mib", "total_mib"}
    ),
    "prestage_setup": frozenset({"prestage_setup", "err", *PRESTAGE_OK, *PRESTAGE_TIMES}),
    "mutex_wait": frozenset({"pre_lock_cpu_ms", "mutex_wait_ms"}),
    "mutex_held": frozenset({"mutex_held_ms", "total_start_fn_ms"}),
    "pool_threshold": frozenset({"gpu"}),
    "d_a_cache": frozenset({"d_a_cache_mib", "gpu"}),
}

# The kind of a line follows from its first key (reference section 1.2).
_FIRST_KEY_KIND = {
    "split_vectors_ms": "split_vectors",
    "prep_msm_ms": "prep_msm",
    "b_g2_msm_ms": "b_g2_msm",
    "epilogue_ms": "epilogue",
    "async_dealloc_ms": "async_dealloc",
    "host_register": "host_register",
    "prestage_setup": "prestage_setup",
    "pre_lock_cpu_ms": "mutex_wait",
    "mutex_held_ms": "mutex_held",
}
_GPU_TID_KIND = {
    "ntt_msm_h_ms": "ntt_msm_h",
    "batch_add_ms": "batch_add",
    "tail_msm_ms": "tail_msm",
    "barrier_wait_ms": "barrier_wait",
}
#: Keys whose values are words, not numbers.
_WORD_KEYS = frozenset({"prestage_setup", "host_register"})

#: The exact key sequence of every all-integer format string -> kind (fast path).
_CANONICAL: dict[tuple[str, ...], str] = {
    ("split_vectors_ms", "setup_to_split_ms"): "split_vectors",
    ("prep_msm_ms",): "prep_msm",
    ("b_g2_msm_ms", "num_circuits"): "b_g2_msm",
    ("gpu_tid", "ntt_msm_h_ms"): "ntt_msm_h",
    ("gpu_tid", "batch_add_ms"): "batch_add",
    ("gpu_tid", "tail_msm_ms", "gpu_total_ms"): "tail_msm",
    ("gpu_tid", "barrier_wait_ms"): "barrier_wait",
    ("epilogue_ms", "pre_destructor_ms"): "epilogue",
    ("async_dealloc_ms",): "async_dealloc",
    ("pre_lock_cpu_ms", "mutex_wait_ms"): "mutex_wait",
    ("mutex_held_ms", "total_start_fn_ms"): "mutex_held",
}
#: The format strings that print a word (reference section 1.2, T9 and T12): (kind, the word's
#: key, the word, the integer keys after it), each read in bulk (``columnar``) in its exact form.
WORD_FORMS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("prestage_setup", "prestage_setup", "ok", PRESTAGE_OK),
    ("prestage_setup", "prestage_setup", "ok", PRESTAGE_OK + PRESTAGE_TIMES),  # (V5)
    ("prestage_setup", "prestage_setup", "fallback", ("err",)),
    ("prestage_setup", "prestage_setup", "skip_vram", ()),
    ("host_register", "host_register", "fallback", ("err",)),
)
#: The keys of the ``prestage_vram`` line (T10), after its bare word.
PRESTAGE_VRAM = ("free_mib", "usable_mib", "need_da_mib", "need_dbc_mib", "total_mib")
_TIMING = Family.TIMING

# (Numbers of up to 18 digits, which ``int`` reads: a longer one leaves the line malformed.)
_POOL_RE = re.compile(r"set pool release threshold to MAX on gpu (-?[0-9]{1,18})\s*$")
_DA_CACHE_RE = re.compile(r"d_a_cache allocated ([0-9]{1,18}) MiB on gpu (-?[0-9]{1,18})\s*$")

NTT_H_KEYS = (
    "d_b_alloc",
    "ntt_kernels",
    "coset_intt_sync",
    "msm_init",
    "msm_invoke",
    "msm_dtor",
    "total",
)
#: (Each name one interned text, as the names written in the source are: the assembly looks
#: them up with its literals, a pointer comparison when the text is the same object.)
_NTT_H_COLUMN = {k: sys.intern(f"{k}_ms") for k in NTT_H_KEYS} | {"total": "ntt_h_total_ms"}


def parse_timing(ln: str, no: int, source: int, acc: Accounting) -> Event:
    """A ``CUZK_TIMING:`` line; the fast path takes canonical lines (known keys, integers)."""
    try:
        fields: dict[str, Value] = {
            k: int(v) for k, v in (t.split("=", 1) for t in ln[13:].split())
        }
        kind = _CANONICAL.get(tuple(fields))
        if kind is not None:
            return Event(no, source, _TIMING, kind, fields)
    except ValueError:
        pass
    return _timing_general(ln, no, source, acc)


def _timing_general(ln: str, no: int, source: int, acc: Accounting) -> Event:
    body = ln[13:].strip()
    if body[:1] in ("s", "d") and "=" not in body:
        m = _POOL_RE.match(body)
        if m is not None:
            return Event(no, source, Family.TIMING, "pool_threshold", {"gpu": int(m.group(1))})
        m = _DA_CACHE_RE.match(body)
        if m is not None:
            return Event(
                no,
                source,
                Family.TIMING,
                "d_a_cache",
                {"d_a_cache_mib": int(m.group(1)), "gpu": int(m.group(2))},
            )
    tokens = body.split()
    fields: dict[str, Value] = {}
    malformed = False
    kind = ""
    bare: list[str] = []
    for tok in tokens:
        k, sep, v = tok.partition("=")
        if not sep:
            bare.append(tok)
            continue
        if k in _WORD_KEYS:
            if not v:
                malformed = True
            fields[k] = v or None
            continue
        try:
            fields[k] = int(v)
        except ValueError:
            fields[k] = None
            malformed = True
    if bare:
        if bare[0] == "prestage_vram" and tokens[0] == "prestage_vram":
            kind = "prestage_vram"
            bare = bare[1:]
        if bare:
            malformed = True
            fields["_words"] = " ".join(bare)
    if not kind:
        first = next(iter(fields), "")
        kind = _FIRST_KEY_KIND.get(first, "")
        if not kind and first == "gpu_tid" and len(fields) > 1:
            kind = _GPU_TID_KIND.get(list(fields)[1], "")
    if not kind:
        kind = "timing_unknown"
        acc.unknown_timing_lines += 1
        for k in fields:
            acc.unknown_keys[k] += 1
    else:
        known = TIMING_KEYS[kind]
        for k in fields:
            if k not in known and k != "_words":
                acc.unknown_keys[k] += 1
    if not fields and kind == "timing_unknown":
        malformed = True
    if malformed:
        acc.note_malformed(no)
    return Event(no, source, Family.TIMING, kind, fields, malformed)


def parse_ntt_h(ln: str, no: int, source: int, acc: Accounting) -> Event:
    """A ``CUZK_NTT_H:`` line (T16): its stage times under the record's column names."""
    fields: dict[str, Value] = {}
    malformed = False
    for tok in ln[12:].split():
        k, sep, v = tok.partition("=")
        col = _NTT_H_COLUMN.get(k)
        if col is None:
            acc.unknown_keys[k] += 1
            col = k
        if not sep or not v.endswith("ms"):
            malformed = True
            fields[col] = None
            continue
        try:
            fields[col] = int(v[:-2])
        except ValueError:
            fields[col] = None
            malformed = True
    if malformed or not fields:
        malformed = True
        acc.note_malformed(no)
    return Event(no, source, Family.NTT_H, "ntt_h", fields, malformed)
