"""The HTML report without a browser: escaping of log text, self-containment, the numbers behind
the charts (``plotdata``) and the ``--format html`` / ``-o`` command lines.

What the page looks like when drawn is tested in a real browser in test_html_browser.py.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cuzk_diag import plotdata
from cuzk_diag.analysis import analyze
from cuzk_diag.cli import cli
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.report import html as html_report
from cuzk_diag.report import html_charts
from cuzk_diag.stats import box_summary

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
INCIDENT = FIXTURES / "sim" / "incident.log"
EXAMPLE = FIXTURES / "example.log"
INCIDENT_JOB = "18072e8c-35bf-492d-89e9-c616612e7696"
#: A job id that is markup, and a script end tag, as a hostile or broken log could hold.
HOSTILE_JOB = "<img src=x onerror=window.__pwned=1></script><script>window.__pwned=2</script>"


def hostile_log(directory: Path) -> Path:
    """The incident log with a job id that is HTML, in a file whose name is HTML too."""
    path = directory / 'run<b>&"1.log'
    path.write_text(INCIDENT.read_text(encoding="utf-8").replace(INCIDENT_JOB, HOSTILE_JOB))
    return path


class Tags(HTMLParser):
    """Every start tag of a document with its attributes, and the text of each script."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.title = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "title":
            self.title += data


def parse(page: str) -> Tags:
    p = Tags()
    p.feed(page)
    p.close()
    return p


@pytest.fixture(scope="module")
def example():
    return analyze([str(EXAMPLE)])


# -- escaping and self-containment ----------------------------------------------------------


def test_json_island_cannot_end_its_script_element() -> None:
    value = {"job": HOSTILE_JOB, "note": "a & b <!-- c --> \u2028 d"}
    text = html_report.json_island(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value


def test_log_text_is_escaped_and_kept(tmp_path: Path) -> None:
    log = hostile_log(tmp_path)
    page = html_report.analysis_page(analyze([str(log)]))
    doc = parse(page)
    # the markup in the log never becomes an element
    assert not [t for t, _ in doc.tags if t == "img"]
    n_scripts = len(html_report.SCRIPTS) + 2  # the libraries, the chart data, the page script
    assert [t for t, _ in doc.tags].count("script") == n_scripts
    # and the text is shown as it is: in the title, and in the charts' data
    assert doc.title == f"cuzk-diag: {log}"
    specs = json.loads(doc.scripts[0])
    assert HOSTILE_JOB in json.dumps(specs["chart-timeline"], ensure_ascii=False)


@pytest.mark.parametrize("log", [INCIDENT, EXAMPLE], ids=lambda p: p.name)
def test_page_needs_nothing_from_outside(log: Path) -> None:
    doc = parse(html_report.analysis_page(analyze([str(log)])))
    assert not [t for t, _ in doc.tags if t in ("link", "iframe", "img", "object", "embed")]
    for tag, attrs in doc.tags:
        assert "src" not in attrs, tag
        href = attrs.get("href")
        assert href is None or href.startswith("#"), href


def test_findings_link_to_their_rules_documentation() -> None:
    a = analyze([str(INCIDENT)])
    doc = parse(html_report.analysis_page(a))
    ids = {attrs.get("id") for _, attrs in doc.tags}
    links = {attrs["href"] for t, attrs in doc.tags if t == "a" and attrs.get("href")}
    for f in a.findings:
        assert f"finding-{f.code}" in ids
        assert f"#rule-{f.code}" in links and f"rule-{f.code}" in ids
    details = [attrs for t, attrs in doc.tags if t == "details"]
    assert [d["id"] for d in details] == [f"rule-{f.code}" for f in a.findings]
    assert all("open" not in d for d in details)  # collapsed


def test_a_log_without_gpu_calls_gives_a_page_without_charts(tmp_path: Path) -> None:
    log = tmp_path / "junk.log"
    log.write_text("hello\nworld\n")
    a = analyze([str(log)])
    doc = parse(html_report.analysis_page(a))
    assert json.loads(doc.scripts[0]) == {}
    assert [attrs["data-code"] for t, attrs in doc.tags if t == "article"] == ["CZ701"]


# -- the numbers behind the charts ----------------------------------------------------------


def test_call_phases_lie_inside_their_call_in_order(example) -> None:
    calls = plotdata.call_spans(example.partitions, example.info, example.facts)
    f = calls.frame
    assert len(f) == 60 and calls.skipped == 0
    assert f["lane"].nunique() == 4  # 2 GPUs x 2 workers
    eps = 1e-9
    assert (f["wait_start_ms"] >= f["start_ms"] - eps).all()
    assert (f["kernel_start_ms"] >= f["wait_start_ms"] + f["wait_ms"] - eps).all()
    assert (f["prep_start_ms"] >= f["kernel_start_ms"] + f["kernel_ms"] - eps).all()
    assert (f["prep_start_ms"] + f["prep_ms"] <= f["end_ms"] + eps).all()
    # main code logs the mutex wait: the drawn wait is the logged one
    df = example.partitions.set_index(["job_id", "partition"])
    logged = df["mutex_wait_ms"].astype(float)
    drawn = f.set_index(["job_id", "partition"])["wait_ms"]
    drawn.index = drawn.index.set_levels(drawn.index.levels[1].astype("int64"), level=1)
    assert np.allclose(drawn.sort_index().to_numpy(), logged.sort_index().to_numpy())


def test_mean_active_and_covered_match_a_fine_grid() -> None:
    rng = np.random.default_rng(7)
    starts = rng.uniform(0, 1000, 40)
    ends = starts + rng.uniform(0, 120, 40)
    edges = np.linspace(-50, 1200, 26)
    grid = np.linspace(-50, 1200, 250_001)[:-1] + 0.0025
    active = ((grid[:, None] >= starts) & (grid[:, None] < ends)).sum(axis=1)
    which = np.digitize(grid, edges) - 1
    mean = np.array([active[which == i].mean() for i in range(len(edges) - 1)])
    busy = np.array([(active[which == i] > 0).mean() for i in range(len(edges) - 1)])
    assert np.allclose(plotdata.mean_active(starts, ends, edges), mean, atol=2e-3)
    assert np.allclose(plotdata.covered(starts, ends, edges), busy, atol=2e-3)


def test_lane_phases_account_for_every_ms_of_every_call(example) -> None:
    calls = plotdata.call_spans(example.partitions, example.info, example.facts)
    f = calls.frame
    edges = plotdata.bin_edges(float(f["start_ms"].min()), float(f["end_ms"].max()), 50)
    shares = plotdata.lane_phases(calls, edges)
    widths = shares["t1_ms"] - shares["t0_ms"]
    got = (shares["share"] * widths).groupby([shares["lane"], shares["phase"]]).sum()
    for lane, sub in f.groupby("lane"):
        assert got[(lane, "kernels")] == pytest.approx(sub["kernel_ms"].sum())
        assert got[(lane, "lock wait")] == pytest.approx(sub["wait_ms"].sum())
        total = got[lane].sum()
        assert total == pytest.approx((sub["end_ms"] - sub["start_ms"]).sum())
    # per bin, the phases add up to the calls' time in the bin (more than the bin where a
    # worker's next call starts before its previous call's GPU_END, as on main code)
    per_bin = shares.groupby(["lane", "t0_ms"])["share"].sum()
    for lane, sub in f.groupby("lane"):
        active = plotdata.mean_active(sub["start_ms"].to_numpy(), sub["end_ms"].to_numpy(), edges)
        assert np.allclose(per_bin[lane].to_numpy(), active[active > 0])
    assert shares.groupby(["lane", "t0_ms"])["calls"].first().sum() == 60
    assert plotdata.overlapping(calls) == 6


def test_throughput_is_measured_from_proof_completions(example) -> None:
    df = example.partitions
    thr = plotdata.throughput_series(df, example.info, window=2)
    ends = df.groupby("job_id")["end_ms"].max().astype(float).sort_values().to_numpy()
    t0 = float(df["synth_start_ms"].min())
    assert thr["t_ms"].tolist() == ends.tolist()
    assert thr["cumulative_s"].iloc[-1] == pytest.approx((ends[-1] - t0) / 6 / 1000)
    assert thr["rolling_s"].iloc[0] == pytest.approx((ends[0] - t0) / 1000)
    assert thr["rolling_s"].iloc[4] == pytest.approx((ends[4] - ends[2]) / 2 / 1000)


def test_box_summary() -> None:
    b = box_summary([1, 2, 3, 4, 5, 6, 7, 8, 9, 100, float("nan")])
    assert b["n"] == 10 and b["median"] == 5.5
    assert (b["q1"], b["q3"]) == (3.25, 7.75)
    assert (b["lower"], b["upper"]) == (1.0, 9.0)
    assert b["outliers"] == [100.0] and b["outliers_total"] == 1
    assert box_summary([]) == {}


def test_timeline_draws_each_call_then_time_bins_for_long_runs(example, monkeypatch) -> None:
    prep = html_charts.prepare(example)
    spec, notes = html_charts.timeline(example, prep)
    gpu = spec["vconcat"][-1]
    assert gpu["layer"][0]["name"] == "timeline_calls"
    assert len(gpu["data"]["values"]) == 60
    assert notes[0] == "One bar per GPU call: 60 calls."

    monkeypatch.setattr(html_charts, "MAX_CALL_BARS", 59)
    spec, notes = html_charts.timeline(example, prep)
    gpu = spec["vconcat"][-1]
    assert [layer["name"] for layer in gpu["layer"]] == ["timeline_shares"]
    assert notes[0].startswith("Aggregated: 60 calls are too many to draw one by one.")
    rows = gpu["data"]["values"]
    assert {r["lane"] for r in rows} == set(prep.calls.frame["lane"])
    # each column stays inside its lane's band, even where a worker's calls overlap
    assert all(r["y"] <= r["y2"] <= int(r["y"]) + 0.85 + 1e-9 for r in rows)


def test_no_timeline_without_timeline_lines() -> None:
    a = analyze([str(FIXTURES / "sim" / "cpp-only.log")])
    spec, notes = html_charts.timeline(a, html_charts.prepare(a))
    assert spec is None
    assert notes == ["No GPU call has TIMELINE GPU_START and GPU_END lines: no timeline."]


# -- command lines --------------------------------------------------------------------------


def test_analyze_writes_an_html_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["analyze", str(INCIDENT), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"wrote html report to {out}" in result.stderr
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


def test_compare_writes_an_html_file(tmp_path: Path) -> None:
    out = tmp_path / "compare.html"
    base = FIXTURES / "rules" / "unpinned-host-memory.clean.log"
    cand = FIXTURES / "rules" / "unpinned-host-memory.trigger.log"
    args = ["compare", str(base), str(cand), "--format", "html", "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    doc = parse(out.read_text(encoding="utf-8"))
    specs = json.loads(doc.scripts[0])
    panels = specs["chart-compare-distributions"]["vconcat"]
    assert len(panels) == 28  # every stage of the comparison, kernel_ms included
    new = [a for t, a in doc.tags if t == "article"]
    assert [(a["data-code"], a["data-status"]) for a in new] == [("CZ102", "new")]


def test_compare_json_to_file_and_unwritable_output(tmp_path: Path) -> None:
    base = str(FIXTURES / "rules" / "unpinned-host-memory.clean.log")
    out = tmp_path / "cmp.json"
    result = CliRunner().invoke(cli, ["compare", base, base, "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["baseline"] == base
    result = CliRunner().invoke(cli, ["compare", base, base, "-o", str(tmp_path)])
    assert result.exit_code == ExitCode.USAGE
    assert f"{tmp_path}: cannot write" in result.stderr
