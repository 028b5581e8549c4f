"""SARIF 2.1.0 (``analyze --format sarif``) for code-scanning dashboards.

One run; the tool's rules are every rule that ran (id = code, name = slug); one result per
finding with its level (error, warning, note), message, the log lines it cites as locations
(``physicalLocation`` on the input file, ``region.startLine`` = line number; the file alone for
a finding that cites no line) and its evidence
and advice as properties. The document validates against the OASIS SARIF 2.1.0 schema
(``tests/data/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from cuzk_diag import __version__
from cuzk_diag.records import Severity

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/filecoin-project/curio"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def artifact_uri(path: str) -> str:
    """The input as a relative URI reference (``stdin`` for ``-``)."""
    if path == "-":
        return "stdin"
    return quote(path.replace("\\", "/"), safe="/._-~")


def to_sarif(analysis: Analysis) -> dict[str, Any]:
    """The SARIF log of an analysis, as a dict."""
    from cuzk_diag.analysis import jsonable
    from cuzk_diag.rules import select_rules

    config = analysis.config
    rules = select_rules(config.select, config.ignore, scope="run")
    index = {r.code: i for i, r in enumerate(rules)}
    inputs = list(analysis.inputs)
    # Finding lines are line numbers of the first input (several inputs are one run).
    uri = artifact_uri(inputs[0]) if inputs else None
    results = []
    for f in analysis.findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": _LEVEL[f.severity],
            "message": {"text": f.message},
            "properties": {
                "severity": str(f.severity),
                "title": f.title,
                "evidence": jsonable(f.evidence),
                "advice": f.advice,
            },
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if uri is not None:
            # Code-scanning dashboards want a location: a finding that cites no line (a fact
            # of the whole run) points at the log itself.
            artifact = {"uri": uri, "index": 0}
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": {"startLine": int(line)},
                    }
                }
                for line in f.lines
            ] or [{"physicalLocation": {"artifactLocation": artifact}}]
        results.append(result)
    driver = {
        "name": "cuzk-diag",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [
            {
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.title},
                "fullDescription": {"text": r.sections().get("What it flags", r.title).strip()},
                "help": {"text": r.sections().get("What to do", "").strip() or r.title},
                "defaultConfiguration": {"level": _LEVEL[r.severity]},
                "properties": {"area": r.area, "tags": [r.area]},
            }
            for r in rules
        ],
    }
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {"era": analysis.facts.era, "summary": analysis.counts()},
    }
    if uri is not None:
        run["artifacts"] = [
            {"location": {"uri": artifact_uri(p)}, "roles": ["analysisTarget"]} for p in inputs
        ]
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render(analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    """Write the SARIF log (``color`` is ignored)."""
    json.dump(to_sarif(analysis), stream, indent=2, ensure_ascii=False, allow_nan=False)
    stream.write("\n")
