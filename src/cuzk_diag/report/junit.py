"""JUnit XML: for ``cuzk-diag check --junit FILE`` (or ``--format junit``) one testcase per gate;
for ``analyze --format junit`` one testcase per rule that ran.

The common Jenkins/JUnit shape that CI systems read: ``<testsuites>`` holding one
``<testsuite>``; a failed gate is a ``<failure>``, a gate that could not be evaluated an
``<error>``, a gate that does not apply ``<skipped>``. The evidence goes into the element text
as indented JSON so a CI test-report page shows the numbers.
"""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cuzk_diag.gate import CheckResult, GateResult, GateStatus
from cuzk_diag.sanitize import neutralise

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis

SUITE_NAME = "cuzk-diag check"

# XML 1.0 forbids most C0 control characters even as character references.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _x(text: Any) -> str:
    """Text for an XML attribute or element: each line neutralised, XML-illegal characters
    replaced (ElementTree escapes the markup characters)."""
    lines = str(text).split("\n")
    return _ILLEGAL_XML.sub("\ufffd", "\n".join(neutralise(ln) for ln in lines))


def _evidence_text(result: GateResult) -> str:
    body = json.dumps(result.evidence, indent=2, sort_keys=True, default=str)
    return _x(f"{result.message}\n\nevidence:\n{body}\n")


def render_junit(
    result: CheckResult,
    *,
    timestamp: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """The JUnit XML document for a check result, as text (UTF-8 declaration included)."""
    ts = (timestamp or datetime.now(UTC)).replace(microsecond=0).isoformat()
    counts = result.counts()
    totals = {
        "tests": str(len(result.results)),
        "failures": str(counts["fail"]),
        "errors": str(counts["error"]),
        "skipped": str(counts["skip"]),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": SUITE_NAME, **totals})
    suite_name = f"{SUITE_NAME}: {result.candidate}" if result.candidate else SUITE_NAME
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _x(suite_name),
            **totals,
            "timestamp": ts,
            "hostname": _x(hostname if hostname is not None else socket.gethostname()),
        },
    )
    props = ET.SubElement(suite, "properties")
    prop_values: list[tuple[str, Any]] = [
        ("candidate", result.candidate),
        ("baseline", result.baseline or ""),
        ("fail_on", result.spec.to_dict()["fail_on"]),
        ("alpha", result.spec.alpha),
    ]
    for k, a, b in result.shape_differences:
        prop_values.append((f"shape_difference.{k}", f"{a} vs {b}"))
    for name, value in prop_values:
        ET.SubElement(props, "property", {"name": _x(name), "value": _x(value)})

    for gate in result.results:
        case = ET.SubElement(
            suite,
            "testcase",
            {"name": _x(gate.name), "classname": f"cuzk-diag.{gate.kind}", "time": "0"},
        )
        if gate.status is GateStatus.FAIL:
            el = ET.SubElement(
                case, "failure", {"message": _x(gate.message), "type": str(gate.kind)}
            )
            el.text = _evidence_text(gate)
        elif gate.status is GateStatus.ERROR:
            el = ET.SubElement(case, "error", {"message": _x(gate.message), "type": str(gate.kind)})
            el.text = _evidence_text(gate)
        elif gate.status is GateStatus.SKIP:
            ET.SubElement(case, "skipped", {"message": _x(gate.message)})
        else:
            out = ET.SubElement(case, "system-out")
            out.text = _evidence_text(gate)
    if result.notes:
        out = ET.SubElement(suite, "system-out")
        out.text = _x("\n".join(result.notes) + "\n")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_junit_error(
    message: str, candidate: str = "", *, timestamp: datetime | None = None
) -> str:
    """A JUnit document with one errored testcase, for a check that could not run at all
    (unreadable input, a log without GPU calls, runs of different shape)."""
    ts = (timestamp or datetime.now(UTC)).replace(microsecond=0).isoformat()
    totals = {"tests": "1", "failures": "0", "errors": "1", "skipped": "0", "time": "0"}
    root = ET.Element("testsuites", {"name": SUITE_NAME, **totals})
    suite_name = f"{SUITE_NAME}: {candidate}" if candidate else SUITE_NAME
    suite = ET.SubElement(root, "testsuite", {"name": _x(suite_name), **totals, "timestamp": ts})
    case = ET.SubElement(suite, "testcase", {"name": "input", "classname": "cuzk-diag.input"})
    el = ET.SubElement(case, "error", {"message": _x(message), "type": "input"})
    el.text = _x(message + "\n")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(result: CheckResult, path: str | Path, **kwargs: Any) -> None:
    """Write the JUnit XML to ``path`` (``-`` is not accepted: stdout carries the report)."""
    Path(path).write_text(render_junit(result, **kwargs), encoding="utf-8")


def render_check(result: CheckResult, stream: IO[str], *, color: str = "auto") -> None:
    """Registry entry (``check --format junit``): ``render_junit`` on ``stream``."""
    stream.write(render_junit(result))


ANALYZE_SUITE = "cuzk-diag analyze"


def render(analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    """Registry entry (``analyze --format junit``): one testcase per rule that ran.

    A rule's finding at or above ``--fail-on`` (warning when none is set) is a ``<failure>``
    whose text holds the message, evidence, log lines and advice; a finding below it, or none,
    leaves the testcase passed (a finding below the threshold is in its ``<system-out>``).
    """
    from cuzk_diag.records import Severity
    from cuzk_diag.rules import select_rules

    config = analysis.config
    threshold = config.fail_on if config.fail_on is not None else Severity.WARNING
    rules = select_rules(config.select, config.ignore)
    by_code: dict[str, list[Any]] = {}
    for f in analysis.findings:
        by_code.setdefault(f.code, []).append(f)
    failing = [f for f in analysis.findings if f.severity >= threshold]
    totals = {
        "tests": str(len(rules)),
        "failures": str(len({f.code for f in failing})),
        "errors": "0",
        "skipped": "0",
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": ANALYZE_SUITE, **totals})
    inputs = ", ".join(analysis.inputs)
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _x(f"{ANALYZE_SUITE}: {inputs}" if inputs else ANALYZE_SUITE),
            **totals,
            "timestamp": datetime.now(UTC).replace(microsecond=0).isoformat(),
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("inputs", inputs),
        ("era", analysis.facts.era),
        ("fail_on", str(threshold)),
    ):
        ET.SubElement(props, "property", {"name": name, "value": _x(value)})
    for rule in rules:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "name": f"{rule.code} {rule.name}",
                "classname": f"cuzk-diag.{rule.area}",
                "time": "0",
            },
        )
        findings = by_code.get(rule.code, [])
        text = "\n\n".join(_finding_text(f) for f in findings)
        worst = max(findings, key=lambda f: f.severity, default=None)
        if worst is not None and worst.severity >= threshold:
            el = ET.SubElement(
                case, "failure", {"message": _x(worst.message), "type": str(worst.severity)}
            )
            el.text = _x(text)
        elif findings:
            ET.SubElement(case, "system-out").text = _x(text)
    ET.indent(root)
    stream.write(
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    )


def _finding_text(f: Any) -> str:
    evidence = json.dumps(f.evidence, indent=2, sort_keys=True, default=str)
    lines = ", ".join(map(str, f.lines))
    return (
        f"{f.code} {f.severity}: {f.title}\n{f.message}\n\nevidence:\n{evidence}\n"
        + (f"log lines: {lines}\n" if lines else "")
        + (f"advice: {f.advice}\n" if f.advice else "")
    )
