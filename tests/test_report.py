"""Reporters: JSON against its documented schema, console colour handling, Markdown."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import jsonschema
import pytest

from _runs import ALL_RUNS
from cuzk_diag.analysis import SCHEMA_VERSION, Analysis, analyze_run
from cuzk_diag.report import common, get_reporter, names, render

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@cache
def analysis(name: str) -> Analysis:
    return analyze_run(ALL_RUNS[name](), inputs=[f"{name}.log"])


def rendered(name: str, fmt: str, color: str = "never") -> str:
    buf = io.StringIO()
    render(fmt, analysis(name), buf, color=color)
    return buf.getvalue()


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@cache
def report_schema() -> dict[str, object]:
    text = (ROOT / "docs" / "report-schema.md").read_text(encoding="utf-8")
    block = re.search(r"## JSON Schema\s+```json\n(.*?)```", text, re.S)
    assert block, "docs/report-schema.md lacks its JSON Schema block"
    schema: dict[str, object] = json.loads(block.group(1))
    return schema


# -- registry -----------------------------------------------------------------------------------


def test_registry() -> None:
    assert names() == ["console", "json", "markdown", "github", "junit", "sarif", "html"]
    with pytest.raises(KeyError, match="unknown report format 'xml'"):
        get_reporter("xml")


def test_only_console_imports_rich() -> None:
    paths = [str(ROOT / "src"), str(ROOT / "tests")]
    code = (
        f"import io, sys; sys.path[:0] = {paths!r}\n"
        "import _runs\n"
        "from cuzk_diag.analysis import analyze_run\n"
        "from cuzk_diag.report import render\n"
        "a = analyze_run(_runs.incident_run())\n"
        "render('json', a, io.StringIO()); render('markdown', a, io.StringIO())\n"
        "render('html', a, io.StringIO())\n"
        "assert 'rich' not in sys.modules, [m for m in sys.modules if m.startswith('rich')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- JSON -----------------------------------------------------------------------------------------


def test_a_damaged_kernel_duration_is_named_not_shown_as_a_share(tmp_path: Path) -> None:
    # One CUZK_NTT_H line of the log with an 11-digit kernel time: no report claims the GPU ran
    # its kernels millions of per cent of the span; each says the view is left out, and why.
    from cuzk_diag.pipeline import load_run

    text = (ROOT / "fixtures" / "sim" / "concurrent-curio.log").read_text(encoding="utf-8")
    log = tmp_path / "damaged-digits.log"
    log.write_text(text.replace("ntt_kernels=1ms", "ntt_kernels=99999999999ms", 1))
    result = analyze_run(load_run([str(log)]))
    doc = json.loads(_render(result, "json"))
    jsonschema.validate(doc, report_schema())
    assert doc["facts"]["over_span"] == ["kernel"] and doc["facts"]["kernel_util"] is None
    assert all(u["kernel_util"] is None for u in doc["facts"]["per_gpu"])
    (idle,) = [f for f in doc["findings"] if f["name"] == "gpu-idle"]
    assert "kernel stage durations add up to more than the span" in idle["message"]
    for fmt in ("console", "markdown", "html"):
        out = _render(result, fmt)
        assert "more than the span" in out, fmt
        assert not re.search(r"\d{5,}(\.\d)?%", out), fmt


def _render(result: Analysis, fmt: str) -> str:
    buf = io.StringIO()
    render(fmt, result, buf, color="never")
    return buf.getvalue()


@pytest.mark.parametrize("name", sorted(ALL_RUNS))
def test_json_matches_documented_schema(name: str) -> None:
    doc = json.loads(rendered(name, "json"))
    jsonschema.validate(doc, report_schema())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["inputs"] == [f"{name}.log"]
    assert sum(doc["summary"].values()) == len(doc["findings"])


def test_json_incident_content() -> None:
    doc = json.loads(rendered("incident", "json"))
    codes = [f["code"] for f in doc["findings"]]
    assert codes == ["CZ101", "CZ201", "CZ202", "CZ501"]
    assert doc["findings"][0]["severity"] == "error"
    assert doc["facts"]["gw"] == 3 and doc["facts"]["proofs"] == 1
    assert doc["summary"] == {"error": 1, "warning": 3, "info": 0}
    stages = {s["field"]: s for s in doc["stages"]}
    assert 3500 < stages["gpu_total_ms"]["median"] < 4000
    assert [s["name"] for s in doc["facts"]["waterfall"]["segments"]][1] == "lock wait"


# -- console --------------------------------------------------------------------------------------


def test_console_incident_shows_facts_findings_stages_waterfall() -> None:
    out = rendered("incident", "console")
    assert not ANSI.search(out)
    flat = " ".join(out.split())  # messages wrap at the console width
    for text in (
        "cuzk-diag: incident.log",
        "phase9-11",
        "Findings: 1 error, 3 warnings, 0 info",
        "ERROR",
        "CZ101 prestage-fallback",
        "Every partition (10 of 10) fell back",
        "3 workers queueing on one GPU",
        "single-proof run cannot show the benefit",
        "evidence",
        "advice",
        "Typical partition",
        "lock wait",
        "Stages (ms)",
        "gpu_total_ms",
        "Accounting",
    ):
        assert text in flat, text
    assert common.FULL in out and common.ESTIMATE in out
    assert max(len(line) for line in out.splitlines()) <= 100


@pytest.mark.parametrize("fmt", ["console", "markdown"])
def test_header_gives_the_clock_estimate_of_the_lock_wait(fmt: str) -> None:
    # Phase 12 code logs no lock wait: the header names the clock estimate and its bounds
    f = analysis("phase12").facts
    assert f.lock_wait_method == "clock"
    assert f.lock_wait_ms_low <= f.lock_wait_ms <= f.lock_wait_ms_high  # type: ignore[operator]
    text = " ".join(rendered("phase12", fmt).replace("│", " ").split())
    if fmt == "markdown":  # log-derived text is Markdown-escaped there
        text = text.replace("\\", "")
    assert "upper bound" not in text
    assert "estimated from the clock (per-GPU queue of GPU_START..GPU_END and holds)" in text
    assert f"holds): median {common.num(f.lock_wait_ms, ' ms')}" in text
    assert f"between {common.num(f.lock_wait_ms_low, ' ms')} and" in text
    wf = f.waterfall
    assert wf is not None
    (seg,) = [s for s in wf.segments if s.name == "lock wait"]
    assert seg.duration_ms == f.lock_wait_ms and not seg.measured and "per-GPU queue" in seg.source


def test_console_healthy_has_no_errors() -> None:
    out = rendered("healthy", "console")
    assert "Findings: 0 errors, 0 warnings, 1 info" in out


def test_console_no_findings_and_empty_run() -> None:
    out = rendered("empty", "console")
    assert "No GPU call found" in out and "Typical partition" not in out


def test_color_always_never_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    a = analysis("incident")
    monkeypatch.delenv("NO_COLOR", raising=False)
    for color, stream, want in (
        ("always", io.StringIO(), True),
        ("never", FakeTTY(), False),
        ("auto", io.StringIO(), False),  # not a terminal
        ("auto", FakeTTY(), True),
    ):
        render("console", a, stream, color=color)
        assert bool(ANSI.search(stream.getvalue())) is want, (color, type(stream).__name__)


def test_no_color_env(monkeypatch: pytest.MonkeyPatch) -> None:
    a = analysis("incident")
    monkeypatch.setenv("NO_COLOR", "1")
    tty = FakeTTY()
    render("console", a, tty, color="auto")
    assert not ANSI.search(tty.getvalue())
    forced = io.StringIO()
    render("console", a, forced, color="always")  # an explicit flag wins
    assert ANSI.search(forced.getvalue())


def test_console_keeps_brackets_literal() -> None:
    run = ALL_RUNS["failed"]()
    run.info.failures[0]["message"] = "wdpost-f01-[1 2 3] failed: [bold]x[/bold]"
    buf = io.StringIO()
    render("console", analyze_run(run), buf, color="never")
    assert "[bold]x[/bold]" in buf.getvalue()


# -- markdown --------------------------------------------------------------------------------------


def test_markdown_incident() -> None:
    out = rendered("incident", "markdown")
    assert out.startswith("# cuzk-diag: `incident.log`")
    assert "## Findings (1 error, 3 warnings, 0 info)" in out
    assert "### ERROR CZ101 `prestage-fallback`" in out
    assert "- **affected**: 10 of 10" in out
    assert "```text\n" in out and "| `gpu_total_ms` |" in out
    assert "## Accounting" in out
    assert not ANSI.search(out)


# -- shared text helpers ---------------------------------------------------------------------------


def test_bars_stay_inside_their_width() -> None:
    assert common.bar(0, 50, 100, 10) == "█████"
    assert common.bar(50, 50, 100, 10) == "     █████"
    assert common.bar(0, 1, 100, 10) == "▏"
    assert common.bar(0, 10, 100, 10, measured=False) == "▒"
    assert len(common.bar(99, 50, 100, 10)) <= 10


def test_number_and_evidence_formatting() -> None:
    assert (
        common.num(11520.0) == "11,520" and common.num(0.5) == "0.5" and common.num(None) == "n/a"
    )
    assert common.value("lock_wait_share", 0.999) == "99.9%"
    assert common.value("by_kind", {"skip_vram": 10}) == "skip_vram=10"
    assert common.evidence_items({"total": 10, "affected": 3, "x": None})[0] == (
        "affected",
        "3 of 10",
    )
    assert (
        common.counts_text({"error": 1, "warning": 0, "info": 2}) == "1 error, 0 warnings, 2 info"
    )
