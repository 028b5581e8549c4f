"""The library entry point: parse a run, compute its facts and stages, run the rules.

from cuzk_diag.analysis import analyze
result = analyze(["daemon.log"])
for f in result.findings:
    print(f.severity, f.code, f.message)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from cuzk_diag import __version__
from cuzk_diag.config import Config, load_config
from cuzk_diag.facts import (
    ColumnMedians,
    LockWait,
    RunFacts,
    compute_facts,
    estimate_lock_wait,
    stage_table,
)
from cuzk_diag.heap import hand_back
from cuzk_diag.records import Accounting, Finding, RunInfo, Severity
from cuzk_diag.rules import RuleContext, run_rules
from cuzk_diag.rules.base import clean_value

#: Version of the JSON report layout (docs/report-schema.md). Bump on incompatible changes.
SCHEMA_VERSION = 1


class RunLike(Protocol):
    """What ``pipeline.load_run`` returns: the partition frame plus run-level information."""

    @property
    def partitions(self) -> pd.DataFrame: ...

    @property
    def info(self) -> RunInfo: ...

    @property
    def accounting(self) -> Accounting: ...


@dataclass(slots=True)
class Analysis:
    """A diagnosed run: the data, the facts, the stage table and the findings."""

    partitions: pd.DataFrame
    facts: RunFacts
    stages: pd.DataFrame
    findings: list[Finding]  # most severe first
    accounting: Accounting
    info: RunInfo
    inputs: list[str] = field(default_factory=list)
    config: Config = field(default_factory=Config)
    #: The frame's lock-wait estimate, as the facts and the rules took it (for the charts).
    lock: LockWait | None = None

    def counts(self) -> dict[str, int]:
        """Findings per severity name (error, warning, info)."""
        return {
            str(s): sum(f.severity == s for f in self.findings)
            for s in sorted(Severity, reverse=True)
        }

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def at_or_above(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity >= severity]

    def unusable(self) -> str | None:
        """Why the input holds nothing to diagnose (no GPU call at all), or None."""
        if self.facts.partitions:
            return None
        acc = self.accounting
        label = ", ".join(self.inputs or acc.sources) or "the input"
        none = f"{label}: no GPU calls found"
        if acc.truncated_inputs:
            cut = acc.truncated_inputs
            why = "; ".join(v if len(cut) == 1 else f"{k}: {v}" for k, v in cut.items())
            return f"{none}: the input ends early: {why}"
        if acc.lines_total == 0:
            return f"{none}: the input is empty"
        if acc.decode_errors * 2 > acc.lines_total:
            return (
                f"{none}: {acc.decode_errors:,} of {acc.lines_total:,} lines are not UTF-8 text "
                "(a binary file?)"
            )
        return f"{none} (no CUZK_TIMING or TIMELINE GPU lines in {acc.lines_total:,} lines)"

    def to_dict(self, *, compact: bool = False) -> dict[str, Any]:
        """The JSON report (layout in docs/report-schema.md); with ``compact``, the run facts
        of the jobs and the proofs as their rows (``RunInfo.to_dict``), for ``jsontext``."""
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "cuzk-diag", "version": __version__},
            "inputs": list(self.inputs),
            "facts": jsonable(self.facts.to_dict()),
            "stages": jsonable(self.stages.to_dict(orient="records")),
            "summary": self.counts(),
            "findings": [jsonable(f.to_dict()) for f in self.findings],
            "accounting": jsonable(self.accounting.to_dict()),
            "info": jsonable(self.info.to_dict(compact=compact)),
            "config": jsonable(self.config.to_dict()),
        }


def jsonable(value: Any) -> Any:
    """Plain JSON types all the way down (numpy scalars unwrapped, NaN/NA -> None)."""
    return clean_value(value)


def analyze_run(
    run: RunLike,
    config: Config | str | Path | None = None,
    *,
    inputs: Sequence[str] = (),
    estimates: bool = False,
) -> Analysis:
    """Facts, stages and findings of an already loaded run.

    ``estimates``: findings whose advice is a configuration the daemon model can replay carry
    its prediction (``Finding.estimate``, :mod:`cuzk_diag.model.savings`; a few seconds at most,
    whatever the log's size)."""
    cfg = _config(config)
    df = run.partitions
    # (The lock-wait estimate made once, for the facts and the rules: ``RuleContext.lock_wait``.)
    lock = estimate_lock_wait(df)
    hand_back()  # (between the steps, each step's freed pages: ``heap.hand_back``)
    stages = stage_table(df)  # (first: its medians are the facts' and the rules')
    medians = ColumnMedians(df, stages)
    facts = compute_facts(df, run.info, lock, medians)
    hand_back()
    ctx = RuleContext(df, facts, run.info, run.accounting, stages, lock=lock, medians=medians)
    findings = run_rules(ctx, cfg)
    sources = list(inputs) or list(run.accounting.sources)
    if estimates:
        from cuzk_diag.model.savings import estimate_findings

        findings = estimate_findings(run, facts, findings, sources)
    return Analysis(df, facts, stages, findings, run.accounting, run.info, sources, cfg, lock)


def analyze(
    inputs: str | Path | Sequence[str | Path],
    config: Config | str | Path | None = None,
    *,
    progress: Callable[..., Any] | None = None,
    jobs: int | None = 1,
    estimates: bool = False,
) -> Analysis:
    """Parse ``inputs`` (paths, ``-`` for stdin) and diagnose the run (``jobs`` > 1: parse
    regular files in a second process, with the same result).

    ``config`` is a ``Config``, a TOML path, or None for the built-in defaults (the CLI, not
    the library, looks for a ``pyproject.toml``). ``estimates`` as in :func:`analyze_run`.
    """
    from cuzk_diag.pipeline import load_run  # imported late: parsing is a layer below

    paths = _paths(inputs)
    run = load_run(paths, progress=progress, jobs=jobs, keep_table=False)
    return analyze_run(run, config, inputs=paths, estimates=estimates)


def load(path_or_paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Just the partition frame (``records.PARTITION_SCHEMA`` columns) of one or more logs."""
    from cuzk_diag.pipeline import load_run

    return load_run(_paths(path_or_paths), keep_table=False).partitions


def _paths(inputs: str | Path | Sequence[str | Path]) -> list[str]:
    if isinstance(inputs, str | Path):
        return [str(inputs)]
    return [str(p) for p in inputs]


def _config(config: Config | str | Path | None) -> Config:
    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    return load_config(str(config))
