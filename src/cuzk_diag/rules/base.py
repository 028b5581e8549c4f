"""The rule machinery: ``Rule``, ``Option``, ``RuleContext``, the registry and selection.

A rule is a class with a stable code (``CZ101``), a slug naming the pattern it flags, a default
severity, a one-line title, documented thresholds (``Option``) and documented evidence keys. Its
docstring holds the user documentation in the sections listed in ``DOC_SECTIONS``; ``cuzk-diag
explain`` and ``docs/rules.md`` are rendered from it. Codes are never reused.
"""

from __future__ import annotations

import inspect
import math
import operator
import re
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from cuzk_diag.factrows import Column, FactRows, KeyedFactRows
from cuzk_diag.facts import ColumnMedians, LockWait, estimate_lock_wait
from cuzk_diag.heap import hand_back
from cuzk_diag.records import Accounting, Finding, RunInfo, Severity
from cuzk_diag.sanitize import neutralise, neutralise_value

if TYPE_CHECKING:
    from cuzk_diag.config import Config
    from cuzk_diag.facts import RunFacts

DOC_SECTIONS = (
    "What it flags",
    "Why it matters",
    "Example log lines",
    "What to do",
    "Known false positives",
)

#: Evidence keys every finding carries, documented once for all rules.
COMMON_EVIDENCE = {
    "affected": "partitions (GPU calls) the finding applies to",
    "total": "partitions the rule could examine (those with the fields it needs)",
}

CODE_RE = re.compile(r"^CZ\d{3}$")
SLUG_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_LINES = 5  # example line numbers per finding


@dataclass(frozen=True, slots=True)
class Option:
    """One configurable threshold of a rule."""

    name: str
    default: int | float | str | bool
    help: str
    minimum: float | None = 0.0
    maximum: float | None = None

    def coerce(self, value: Any) -> int | float | str | bool:
        """Check a configured value against the default's type and the bounds."""
        want = type(self.default)
        if want is bool:
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
            return value
        if want in (int, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"expected a number, got {value!r}")
            if want is int and not float(value).is_integer():
                raise ValueError(f"expected an integer, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"expected a finite number, got {value!r}")
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"must be >= {self.minimum:g}, got {value!r}")
            if self.maximum is not None and value > self.maximum:
                raise ValueError(f"must be <= {self.maximum:g}, got {value!r}")
            return want(value)
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
        return value


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What a rule sees: the partition frame, the run facts and its own options; ``lock``, the
    frame's lock-wait estimate as the facts took it (``lock_wait``)."""

    partitions: pd.DataFrame
    facts: RunFacts
    info: RunInfo
    accounting: Accounting
    stages: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)
    lock: LockWait | None = None
    #: The frame's column medians, made once for every rule's context (``median``; ``replace``
    #: hands it on to each).
    medians: ColumnMedians | None = None

    def __post_init__(self) -> None:
        if self.medians is None:
            object.__setattr__(self, "medians", ColumnMedians(self.partitions, self.stages))

    def lock_wait(self) -> LockWait:
        """The frame's ``estimate_lock_wait``: the one the facts took, else made now. (Made
        once per analysis: on code that logs no lock wait, Phase 12 and pool-cache, it is the
        per-GPU mutex queue solved call by call, two thirds of the analysis's time when each
        rule made its own.)"""
        return self.lock if self.lock is not None else estimate_lock_wait(self.partitions)

    def median(self, col: str) -> float | None:
        """``facts.median`` of a column of the frame: the stage table's figure where it has the
        column (the same one, not worked out again)."""
        assert self.medians is not None  # (``__post_init__``)
        return self.medians(col)


class Rule:
    """Base class of every rule; subclasses set the class attributes and ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]  # slug: names the pattern, not the fix
    area: ClassVar[str]  # module area: memory, locking, cpu, utilisation, shape, ...
    scope: ClassVar[str] = "run"  # what it examines: one run, or a fleet dataset ("fleet")
    severity: ClassVar[Severity]  # default (highest) severity the rule emits
    title: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    evidence: ClassVar[dict[str, str]] = {}  # evidence key -> meaning (besides affected/total)

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(
        self,
        severity: Severity,
        message: str,
        evidence: dict[str, Any],
        *,
        lines: Iterable[int] = (),
        advice: str = "",
        calls: Iterable[int] = (),
    ) -> Finding:
        """A finding of this rule; evidence must include ``affected`` and ``total``."""
        missing = {"affected", "total"} - set(evidence)
        if missing:
            raise ValueError(f"{self.code}: evidence lacks {sorted(missing)}")
        undocumented = set(evidence) - set(COMMON_EVIDENCE) - set(self.evidence)
        if undocumented:
            raise ValueError(f"{self.code}: undocumented evidence keys {sorted(undocumented)}")
        # in the order given (rules list their most telling lines first), without repeats
        uniq = list(dict.fromkeys(int(x) for x in lines if x is not None and not _isnan(x)))
        return Finding(
            code=self.code,
            name=self.name,
            severity=severity,
            title=self.title,
            # messages, evidence and advice quote the log: neutralised once, here
            message=neutralise(message),
            evidence={k: neutralise_value(clean_value(v)) for k, v in evidence.items()},
            lines=tuple(uniq[:MAX_LINES]),
            advice=neutralise(advice),
            calls=calls if type(calls) is array and calls.typecode == "q" else array("q", calls),
        )

    # -- documentation ---------------------------------------------------------------------

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's ``## Heading`` sections, in order."""
        out: dict[str, str] = {}
        current: str | None = None
        buf: list[str] = []
        for line in cls.doc().splitlines():
            if line.startswith("## "):
                if current is not None:
                    out[current] = "\n".join(buf).strip()
                current, buf = line[3:].strip(), []
            elif current is not None:
                buf.append(line)
        if current is not None:
            out[current] = "\n".join(buf).strip()
        return out

    @classmethod
    def summary(cls) -> dict[str, Any]:
        """Machine-readable description (``cuzk-diag rules --format json``)."""
        return {
            "code": cls.code,
            "name": cls.name,
            "area": cls.area,
            "scope": cls.scope,
            "severity": str(cls.severity),
            "title": cls.title,
            "options": [
                {"name": o.name, "default": o.default, "help": o.help} for o in cls.options
            ],
            "evidence": {**COMMON_EVIDENCE, **cls.evidence},
        }


# -- registry -------------------------------------------------------------------------------

_REGISTRY: dict[str, type[Rule]] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator: validate a rule's metadata and docs and add it to the registry."""
    if not CODE_RE.match(cls.code):
        raise ValueError(f"{cls.__name__}: bad rule code {cls.code!r}")
    if cls.scope not in SCOPES:
        raise ValueError(f"{cls.__name__}: scope must be one of {SCOPES}")
    if not SLUG_RE.match(cls.name):
        raise ValueError(f"{cls.__name__}: bad rule slug {cls.name!r}")
    for other in _REGISTRY.values():
        if other is not cls and (other.code == cls.code or other.name == cls.name):
            raise ValueError(f"{cls.__name__}: code or slug already used by {other.__name__}")
    missing = [s for s in DOC_SECTIONS if not cls.sections().get(s)]
    if missing:
        raise ValueError(f"{cls.code}: docstring lacks section(s) {missing}")
    _REGISTRY[cls.code] = cls
    return cls


SCOPES = ("run", "fleet")


def all_rules(scope: str | None = None) -> list[type[Rule]]:
    """Every registered rule of ``scope`` (all scopes when None), by code."""
    return [_REGISTRY[c] for c in sorted(_REGISTRY) if scope is None or _REGISTRY[c].scope == scope]


def get_rule(code_or_slug: str) -> type[Rule]:
    """A rule by code (any case) or slug; ``KeyError`` with a helpful message otherwise."""
    key = code_or_slug.strip()
    for rule in _REGISTRY.values():
        if rule.code == key.upper() or rule.name == key.lower():
            return rule
    import difflib

    names = [r.name for r in _REGISTRY.values()] + list(_REGISTRY)
    close = difflib.get_close_matches(key, names, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `cuzk-diag rules`"
    raise KeyError(f"unknown rule {code_or_slug!r}{hint}")


def _matches(rule: type[Rule], token: str) -> bool:
    t = token.strip()
    return t.upper() == "ALL" or rule.code.startswith(t.upper()) or rule.name == t.lower()


def matches_any_rule(token: str) -> bool:
    return any(_matches(r, token) for r in _REGISTRY.values())


def select_rules(
    select: Sequence[str] | None = None, ignore: Sequence[str] = (), scope: str | None = None
) -> list[type[Rule]]:
    """Rules of ``scope`` chosen by ``select`` (all when None) minus ``ignore``."""
    chosen = [r for r in all_rules(scope) if select is None or any(_matches(r, t) for t in select)]
    return [r for r in chosen if not any(_matches(r, t) for t in ignore)]


def run_rules(base: Any, config: Config, scope: str = "run") -> list[Finding]:
    """Run the selected rules of ``scope`` on ``base`` (a ``RuleContext`` for one run, a
    ``FleetContext`` for a fleet); findings most severe first, then by code."""
    findings: list[Finding] = []
    for rule_cls in select_rules(config.select, config.ignore, scope=scope):
        ctx = replace(base, options=config.rule_options(rule_cls.code))
        override = config.severity_override(rule_cls.code)
        for f in rule_cls().check(ctx):
            findings.append(replace(f, severity=override) if override is not None else f)
    # (The rules' freed pages once, after them all: ``heap.hand_back``. Each rule's arrays are
    # of a value per call, and the next rule's reuse the pages of the last one's; handed back
    # after each rule, they cost the 250 MB log's rules 10 of their 45 ms, the analysis's
    # peak the same 211 MiB either way, ``bench/memory_steps.py --mb 250 --jobs 2``.)
    hand_back()
    findings.sort(key=lambda f: (-int(f.severity), f.code))
    return findings


# -- documentation rendering (explain, docs/rules.md) ----------------------------------------


def render_rule_markdown(rule: type[Rule], level: int = 2) -> str:
    """One rule's documentation as Markdown: heading, metadata, sections, options, evidence."""
    h = "#" * level
    out = [
        f"{h} {rule.code} `{rule.name}`: {rule.title}",
        "",
        f"Area: {rule.area}. Default severity: {rule.severity}.",
        "",
    ]
    for name, body in rule.sections().items():
        out += [f"{h}# {name}", "", body, ""]
    out += [f"{h}# Options", ""]
    out += [
        "Set in `[tool.cuzk-diag.rules."
        f'{rule.name}]` (or `.{rule.code}`); `severity = "info|warning|error"` replaces the '
        "severity the rule computes.",
        "",
    ]
    if rule.options:
        out += ["| option | default | meaning |", "|---|---|---|"]
        out += [f"| `{o.name}` | `{_toml(o.default)}` | {o.help} |" for o in rule.options]
    else:
        out.append("This rule has no thresholds.")
    out += ["", f"{h}# Evidence", "", "| key | meaning |", "|---|---|"]
    out += [f"| `{k}` | {v} |" for k, v in {**COMMON_EVIDENCE, **rule.evidence}.items()]
    out.append("")
    return "\n".join(out)


def render_rules_markdown() -> str:
    """The whole ``docs/rules.md``."""
    rules = all_rules()
    out = [
        "# Rules",
        "",
        "<!-- Generated by tools/gen_rules_doc.py from the rule docstrings; do not edit. -->",
        "",
        "Every rule has a stable code, a slug, a default severity and documented thresholds. "
        "Select or ignore rules with `--select`/`--ignore` (codes, code prefixes or slugs) or "
        "`select`/`ignore` in `[tool.cuzk-diag]`; `cuzk-diag explain CODE` prints one entry.",
        "",
        "| code | slug | area | default severity | title |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| [{r.code}](#{_anchor(r)}) | `{r.name}` | {r.area} | {r.severity} | {r.title} |"
        for r in rules
    ]
    out.append("")
    for r in rules:
        out.append(render_rule_markdown(r))
    return "\n".join(out).rstrip("\n") + "\n"


def _anchor(rule: type[Rule]) -> str:
    text = f"{rule.code} {rule.name}: {rule.title}".lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


# -- small helpers shared by the rules -------------------------------------------------------


def _isnan(x: object) -> bool:
    return isinstance(x, float) and math.isnan(x)


#: Values ``clean_value`` gives back as they are; a dict or list of them alone is given back
#: itself (the run facts of every job in a long log's report), without a step per value.
_PLAIN = frozenset({str, int, bool, type(None)})
_STR = frozenset({str})


def clean_value(v: Any) -> Any:
    """Evidence values as plain JSON types: numpy scalars unwrapped, NaN -> None, floats rounded.

    A dict with text keys and a list whose values are plain already (texts, whole numbers,
    booleans, None, and floats that are finite and have three decimals at most) are given back
    themselves, not copied: the copies of a long log's run facts (a dict per job and per proof)
    took 26 MiB of the 1 GB log's JSON report. Copy such a value before changing it."""
    if type(v) is float:
        # (The one value most often changed, first: a long log's report holds one per proof
        # and per job, each found here after four tests otherwise.)
        return round(v, 3) if math.isfinite(v) else None
    if isinstance(v, FactRows | KeyedFactRows):
        # (The run facts of every job and proof, as columns: themselves when every column's
        # values are plain, else each value cleaned.)
        return v if all(map(_plain_column, v.columns())) else v.mapped(clean_value)
    if isinstance(v, dict):
        if _STR.issuperset(map(type, v)) and _all_plain(v.values()):
            return v if type(v) is dict else dict(v)  # (a subclass, a Counter: a plain dict)
        return {str(k): x if type(x) in _PLAIN else clean_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        if type(v) is list and _all_plain(v):
            return v
        if _PLAIN.issuperset(map(type, v)):
            return list(v)
        out = [x if type(x) in _PLAIN else clean_value(x) for x in v]
        # (A list of plain dicts, each given back itself: the list itself, if it is one.)
        return v if type(v) is list and all(map(operator.is_, out, v)) else out
    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        return round(v, 3)
    return v


def _plain_column(column: Column) -> bool:
    """``_all_plain`` of a column of ``FactRows`` (an array of 64-bit integers is)."""
    if type(column) is array:
        return column.typecode == "q" or all(math.isfinite(x) and round(x, 3) == x for x in column)
    return _all_plain(column)


def _all_plain(values: Iterable[Any]) -> bool:
    """Whether ``clean_value`` gives every one of ``values`` back as it is (no dicts or lists:
    those are looked at by ``clean_value`` itself)."""
    types = set(map(type, values))
    if types <= _PLAIN:
        return True
    if not types - _PLAIN <= {float}:
        return False
    return all(type(x) is not float or (math.isfinite(x) and round(x, 3) == x) for x in values)


def ms(x: float | None) -> str:
    """A duration for a message: ``934 ms``, ``11,520 ms``; ``n/a`` when unknown."""
    if x is None or _isnan(x):
        return "n/a"
    return f"{x:,.0f} ms"


def pct(x: float | None) -> str:
    if x is None or _isnan(x):
        return "n/a"
    return f"{100 * x:.0f}%"


def calls_of(df: pd.DataFrame, mask: pd.Series | None = None) -> array[int]:
    """``first_line`` of every selected row: the calls a finding applies to, in file order, as
    64-bit integers (``array("q")``: 8 bytes a call, where Python ints in a tuple took 40; a
    finding of every call of the 1 GB log held 13 MiB)."""
    return array("q", _first_lines(df, mask).tobytes())


def lines_of(df: pd.DataFrame, mask: pd.Series | None = None) -> list[int]:
    """Example line numbers: ``first_line`` of the selected rows, in file order."""
    lines: list[int] = _first_lines(df, mask)[:MAX_LINES].tolist()
    return lines


def _first_lines(df: pd.DataFrame, mask: pd.Series | None) -> np.ndarray:
    """The selected rows' ``first_line`` values, sorted (int64, no missing value)."""
    if "first_line" not in df.columns or df.empty:
        return np.empty(0, dtype=np.int64)
    # (The column is selected before the rows: ``df[mask]`` would copy every column.)
    col = df["first_line"]
    rows = col if mask is None else col[mask.fillna(False).astype(bool)]
    # (A stable sort: numpy's is a timsort, which takes the runs of line numbers the frame's
    # lock order leaves in file order as they are: 0.08 ms for the 250 MB log's 87,210 calls,
    # where its default sort took 3.1 ms. The same integers either way.)
    lines = pd.to_numeric(rows, errors="coerce").dropna().to_numpy(dtype="int64")
    return np.sort(lines, kind="stable")
