"""`cuzk-diag check` / `compare` end to end, and the CI reporters (JUnit, GitHub)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest

from _gate_runs import finding, make_run
from cuzk_diag import gate
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.gate import GateSpec
from cuzk_diag.records import Severity
from cuzk_diag.report import github, junit

DATA = Path(__file__).parent / "data"
XS = "{http://www.w3.org/2001/XMLSchema}"

# --------------------------------------------------------------------------------------------
# A structural validator for the flat XSD in tests/data/junit.xsd (xml.etree only): element
# declarations with a sequence of element refs, attributes with use/type, mixed content.
# --------------------------------------------------------------------------------------------

_TYPES = {
    "xs:string": re.compile(r"(?s).*"),
    "xs:nonNegativeInteger": re.compile(r"\d+"),
    "xs:decimal": re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)"),
    "xs:dateTime": re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"),
}


def _load_schema(path: Path) -> dict[str, dict]:
    root = ET.parse(path).getroot()
    decls = {}
    for el in root.findall(f"{XS}element"):
        ct = el.find(f"{XS}complexType")
        seq = ct.find(f"{XS}sequence") if ct is not None else None
        particles = []
        if seq is not None:
            for p in seq.findall(f"{XS}element"):
                mx = p.get("maxOccurs", "1")
                particles.append(
                    (
                        p.get("ref"),
                        int(p.get("minOccurs", "1")),
                        None if mx == "unbounded" else int(mx),
                    )
                )
        attrs = {}
        if ct is not None:
            for a in ct.findall(f"{XS}attribute"):
                attrs[a.get("name")] = (a.get("type"), a.get("use", "optional"))
        decls[el.get("name")] = {
            "mixed": ct is not None and ct.get("mixed") == "true",
            "particles": particles,
            "attrs": attrs,
        }
    return decls


def validate(doc: str, schema_path: Path = DATA / "junit.xsd") -> list[str]:
    decls = _load_schema(schema_path)
    errors: list[str] = []

    def check(el: ET.Element, path: str) -> None:
        where = f"{path}/{el.tag}"
        decl = decls.get(el.tag)
        if decl is None:
            errors.append(f"{where}: element not declared")
            return
        for name, value in el.attrib.items():
            if name not in decl["attrs"]:
                errors.append(f"{where}: attribute {name!r} not declared")
                continue
            typ = decl["attrs"][name][0]
            if not _TYPES[typ].fullmatch(value):
                errors.append(f"{where}: {name}={value!r} is not {typ}")
        for name, (_, use) in decl["attrs"].items():
            if use == "required" and name not in el.attrib:
                errors.append(f"{where}: required attribute {name!r} missing")
        if not decl["mixed"]:
            texts = [el.text] + [c.tail for c in el]
            if any(t and t.strip() for t in texts):
                errors.append(f"{where}: text in element-only content")
        children = list(el)
        i = 0
        for ref, lo, hi in decl["particles"]:
            n = 0
            while i < len(children) and children[i].tag == ref and (hi is None or n < hi):
                n += 1
                i += 1
            if n < lo:
                errors.append(f"{where}: expected at least {lo} <{ref}>")
        if i < len(children):
            errors.append(f"{where}: unexpected <{children[i].tag}> at position {i}")
        for c in children:
            check(c, where)

    check(ET.fromstring(doc.encode("utf-8")), "")
    return errors


def test_validator_rejects_bad_documents():
    assert validate("<testsuites><testsuite tests='1'/></testsuites>") == [
        "/testsuites/testsuite: required attribute 'name' missing"
    ]
    assert validate("<testsuites><testcase name='x'/></testsuites>")
    assert validate("<testsuites tests='one'/>")
    bad_order = (
        "<testsuites><testsuite name='s' tests='1'><testcase name='a'/>"
        "<properties><property name='a' value='b'/></properties></testsuite></testsuites>"
    )
    assert validate(bad_order)


# --------------------------------------------------------------------------------------------
# Reporters on synthetic results
# --------------------------------------------------------------------------------------------


def _mixed_result():
    base = make_run(60, seed=1, label="base.log")
    cand = make_run(
        60,
        seed=2,
        slow=1.10,
        label="cand.log",
        s_per_proof=None,
        prestage=["ok"] * 59 + ["fallback"],
        findings=[
            finding("CZ101", Severity.ERROR, 'pinned <fallback> & "oops"\x01'),
            finding("CZ200", Severity.WARNING, "slow, 100%: mutex"),
        ],
    )
    spec = GateSpec(
        bounds=(
            gate.parse_bound("prestage_fallback.rate == 0"),
            gate.parse_bound("gpu_total_ms.p50 <= 5000"),
            gate.parse_bound("s_per_proof <= 40"),
        ),
        regressions=(gate.parse_regression("util_kernel: -3%"),),
    )
    return gate.check(spec, cand, base)


def test_junit_validates_and_has_one_testcase_per_gate():
    result = _mixed_result()
    doc = junit.render_junit(
        result, timestamp=datetime(2026, 3, 13, 20, 41, tzinfo=UTC), hostname="h"
    )
    assert validate(doc) == []
    root = ET.fromstring(doc.encode())
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(result.results)
    assert suite.get("tests") == str(len(result.results))
    assert suite.get("failures") == str(len(result.failed))
    assert suite.get("errors") == str(len(result.errored)) == "1"
    assert suite.get("timestamp") == "2026-03-13T20:41:00+00:00"
    by_name = {c.get("name"): c for c in cases}
    fallback = by_name["prestage_fallback.rate == 0"].find("failure")
    assert fallback is not None and "0.0166" in fallback.get("message")
    assert '"value": 0.016' in fallback.text
    assert by_name["s_per_proof <= 40"].find("error") is not None
    reg = by_name["regression gpu_total_ms.p50 +5%"].find("failure")
    assert reg is not None and '"p_value"' in reg.text
    assert by_name["gpu_total_ms.p50 <= 5000"].find("system-out") is not None
    sev = by_name["no findings at or above error"].find("failure")
    assert "pinned <fallback>" in sev.get("message")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["candidate"] == "cand.log" and props["baseline"] == "base.log"


def test_junit_for_a_passing_run_and_for_an_input_error():
    ok = gate.check(GateSpec(), make_run(20))
    doc = junit.render_junit(ok)
    assert validate(doc) == []
    assert ET.fromstring(doc.encode()).get("failures") == "0"
    err = junit.render_junit_error("x.log: no GPU calls found", "x.log")
    assert validate(err) == []
    case = ET.fromstring(err.encode()).find("testsuite/testcase")
    assert case.find("error").get("message") == "x.log: no GPU calls found"


def test_github_escaping():
    assert github.escape_data("50%\nnext\r") == "50%25%0Anext%0D"
    assert github.escape_property("a: b, c") == "a%3A b%2C c"
    assert github.command("error", "m\nx", title="t: 1") == "::error title=t%3A 1::m%0Ax"


def test_github_annotations():
    result = _mixed_result()
    out = github.render_github(result)
    lines = out.splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert any("gate failed%3A regression gpu_total_ms.p50 +5%25" in e for e in errors)
    assert any(e.startswith("::error title=CZ101 pinned") for e in errors)
    assert any(
        e.startswith("::error title=cuzk-diag gate not evaluated%3A s_per_proof") for e in errors
    )
    assert any(line.startswith("::warning title=CZ200 slow%2C 100%25%3A mutex::") for line in lines)
    # no raw newline can leak into a command
    for line in lines:
        if line.startswith("::"):
            assert "\n" not in line and "\r" not in line
    assert "cuzk-diag check could not be evaluated" in out


def test_markdown_summary_and_step_summary(tmp_path):
    result = _mixed_result()
    md = github.markdown_summary(result)
    assert md.startswith("## cuzk-diag check ⛔ could not be evaluated")
    assert "| ❌ | `prestage_fallback.rate == 0` |" in md
    assert "| metric | baseline | candidate | change | p | effect r |" in md
    assert "### Findings" in md
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    assert github.append_step_summary(md, {"GITHUB_STEP_SUMMARY": str(target)}) == target
    assert target.read_text() == "earlier step\n" + md
    assert github.append_step_summary(md, {}) is None


# --------------------------------------------------------------------------------------------
# The CLI on real log files
# --------------------------------------------------------------------------------------------

from cuzk_diag import cli as cli_mod  # noqa: E402  (the CLI part of this module)
from cuzk_diag.model import daemon as sim  # noqa: E402

#: Phase 9-11 code with one worker per GPU: gpu_total_ms about 2.5 s and steady (no barrier
#: wait in it), seven proofs of ten partitions at cuzk-bench -c 7 -j 3.
SHAPE = {"era": "phase9-11", "n_gpus": 1, "gw": 1, "proofs": 7, "concurrency": 3}
TINY = {**SHAPE, "proofs": 1, "concurrency": 1, "partitions_per_proof": 3}
SLOW_10 = {"batch_add": 900.0}  # +255 ms on ~2.55 s of gpu_total_ms
SLOW_1 = {"batch_add": 670.0}


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("sim")
    runs = {
        "base": dict(SHAPE, seed=1),
        "slow10": dict(SHAPE, seed=2, durations=SLOW_10),
        "slow1": dict(SHAPE, seed=2, durations=SLOW_1),
        "tiny_base": dict(TINY, seed=1),
        "tiny_slow10": dict(TINY, seed=2, durations=SLOW_10),
        "fallback": dict(SHAPE, seed=4, prestage_fail_rate=0.3),
        "gw2": dict(SHAPE, seed=3, gw=2),
    }
    out = {}
    for name, kw in runs.items():
        path = d / f"{name}.log"
        path.write_text(sim.simulate(sim.SimConfig(**kw)).text)
        out[name] = str(path)
    path = d / "no_timing.log"
    path.write_text((Path(__file__).parent.parent / "fixtures/lines/bench.log").read_text())
    out["no_timing"] = str(path)
    return out


def invoke(args: list[str], input: str | None = None, env: dict[str, str] | None = None):
    from click.testing import CliRunner

    env = {"GITHUB_STEP_SUMMARY": "", "NO_COLOR": "1", **(env or {})}
    return CliRunner().invoke(cli_mod.cli, args, input=input, env=env, catch_exceptions=False)


def gates_of(result) -> dict[str, dict]:
    return {g["name"]: g for g in json.loads(result.stdout)["gates"]}


def test_check_passes_a_healthy_run(logs):
    r = invoke(["check", logs["base"]])
    assert r.exit_code == ExitCode.OK, r.output
    assert "passed" in r.stdout
    assert r.stderr == ""


def test_ten_percent_slower_gpu_total_on_70_partitions_fails(logs):
    r = invoke(["check", logs["slow10"], "--baseline", logs["base"], "--format", "json"])
    assert r.exit_code == ExitCode.FINDINGS, r.output
    reg = gates_of(r)["regression gpu_total_ms.p50 +5%"]
    assert reg["status"] == "fail"
    ev = reg["evidence"]
    assert ev["change"] > 0.05 and ev["p_value"] < 0.05
    assert ev["n_baseline"] == ev["n_candidate"] == 70
    assert ev["test"] == "mann-whitney-u" and ev["rank_biserial"] > 0.5
    sp = gates_of(r)["regression s_per_proof +5%"]
    assert sp["status"] == "pass" and sp["evidence"]["test"] == "none"
    assert any("limit alone" in n for n in json.loads(r.stdout)["notes"])


def test_one_percent_slower_passes(logs):
    r = invoke(["check", logs["slow1"], "--baseline", logs["base"], "--format", "json"])
    assert r.exit_code == ExitCode.OK, r.output
    assert gates_of(r)["regression gpu_total_ms.p50 +5%"]["evidence"]["change"] < 0.05


def test_ten_percent_slower_on_three_partitions_passes(logs):
    r = invoke(["check", logs["tiny_slow10"], "--baseline", logs["tiny_base"], "--format", "json"])
    assert r.exit_code == ExitCode.OK, r.output
    reg = gates_of(r)["regression gpu_total_ms.p50 +5%"]
    assert reg["status"] == "pass"
    assert reg["evidence"]["exceeds_limit"] and not reg["evidence"]["significant"]
    assert reg["evidence"]["n_candidate"] == 3
    assert "not significant" in reg["message"]


def test_prestage_fallback_fails_its_gate(logs):
    args = ["--gate", "prestage_fallback.rate == 0", "--format", "json"]
    r = invoke(["check", logs["fallback"], *args])
    assert r.exit_code == ExitCode.FINDINGS, r.output
    g = gates_of(r)["prestage_fallback.rate == 0"]
    assert g["status"] == "fail" and g["evidence"]["value"] > 0
    assert invoke(["check", logs["base"], *args]).exit_code == ExitCode.OK


def test_log_without_timing_lines_exits_2(logs, tmp_path):
    junit_file = tmp_path / "junit.xml"
    r = invoke(["check", logs["no_timing"], "--junit", str(junit_file)])
    assert r.exit_code == ExitCode.USAGE
    assert r.stdout == ""
    assert r.stderr.startswith("Error: ") or r.stderr.startswith("cuzk-diag: error: ")
    assert "no GPU calls" in r.stderr
    doc = junit_file.read_text()
    assert validate(doc) == []
    assert ET.fromstring(doc.encode()).get("errors") == "1"


def test_empty_input_on_stdin_exits_2():
    r = invoke(["check", "-"], input="")
    assert r.exit_code == ExitCode.USAGE


def test_different_shape_refused_unless_allowed(logs):
    r = invoke(["check", logs["gw2"], "--baseline", logs["base"]])
    assert r.exit_code == ExitCode.USAGE
    assert "gw" in r.stderr and "--allow-different-config" in r.stderr
    r = invoke(
        [
            "check",
            logs["gw2"],
            "--baseline",
            logs["base"],
            "--allow-different-config",
            "--format",
            "json",
        ]
    )
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDINGS)
    diffs = json.loads(r.stdout)["shape_differences"]
    assert {d["field"] for d in diffs} == {"gw"}


def test_parquet_baseline_detected_by_magic(logs, tmp_path):
    export = tmp_path / "baseline.bin"  # no .parquet suffix: detected by PAR1
    r = invoke(["export", logs["base"], "-o", str(export), "--format", "parquet", "-q"])
    assert r.exit_code == 0, r.output
    assert export.read_bytes()[:4] == b"PAR1"
    from_log = invoke(["check", logs["slow10"], "--baseline", logs["base"], "--format", "json"])
    from_pq = invoke(["check", logs["slow10"], "--baseline", str(export), "--format", "json"])
    assert from_pq.exit_code == ExitCode.FINDINGS, from_pq.output
    a = gates_of(from_log)["regression gpu_total_ms.p50 +5%"]["evidence"]
    b = gates_of(from_pq)["regression gpu_total_ms.p50 +5%"]["evidence"]
    assert a["p_value"] == b["p_value"] and a["baseline"] == b["baseline"]
    assert b["n_baseline"] == 70


def test_candidate_on_stdin(logs):
    text = Path(logs["slow10"]).read_text()
    r = invoke(["check", "-", "--baseline", logs["base"], "--format", "json"], input=text)
    assert r.exit_code == ExitCode.FINDINGS, r.output
    assert json.loads(r.stdout)["candidate"] == "<stdin>"
    r = invoke(["check", "-", "--baseline", "-"], input=text)
    assert r.exit_code == ExitCode.USAGE


def test_ci_outputs_junit_github_and_step_summary(logs, tmp_path):
    junit_file = tmp_path / "cuzk-diag-junit.xml"
    summary = tmp_path / "summary.md"
    summary.write_text("")
    r = invoke(
        [
            "check",
            logs["slow10"],
            "--baseline",
            logs["base"],
            "--junit",
            str(junit_file),
            "--format",
            "github",
            "--gate",
            "prestage_fallback.rate == 0",
        ],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert r.exit_code == ExitCode.FINDINGS, r.output
    assert any(
        line.startswith("::error title=cuzk-diag gate failed%3A regression gpu_total_ms.p50")
        for line in r.stdout.splitlines()
    )
    doc = junit_file.read_text()
    assert validate(doc) == []
    suite = ET.fromstring(doc.encode()).find("testsuite")
    names = [c.get("name") for c in suite.findall("testcase")]
    assert names == [
        "no findings at or above error",
        "prestage_fallback.rate == 0",
        "regression s_per_proof +5%",
        "regression gpu_total_ms.p50 +5%",
    ]
    assert suite.get("failures") == "1"
    md = summary.read_text()
    assert md.startswith("## cuzk-diag check ❌ failed")
    assert "| `gpu_total_ms.p50` |" in md


def test_console_and_markdown_formats(logs):
    r = invoke(["check", logs["slow10"], "--baseline", logs["base"]])
    assert r.exit_code == ExitCode.FINDINGS
    assert "FAIL" in r.stdout and "regression gpu_total_ms.p50 +5%" in r.stdout
    assert "\x1b[" not in r.stdout
    r = invoke(["check", logs["slow10"], "--baseline", logs["base"], "--format", "markdown"])
    assert r.stdout.startswith("## cuzk-diag check ❌ failed")


def test_gates_from_config_and_cli_override(logs, tmp_path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(
        '[tool.cuzk-diag.gates]\nfail-on = "warning"\n'
        '[tool.cuzk-diag.gates.bounds]\n"gpu_total_ms.p50" = "<= 2000"\n'
        '[tool.cuzk-diag.gates.regressions]\n"gpu_total_ms.p50" = "+20%"\n'
    )
    r = invoke(["check", logs["base"], "--config", str(cfg), "--format", "json"])
    assert r.exit_code == ExitCode.FINDINGS
    failed = {g["name"] for g in json.loads(r.stdout)["gates"] if g["status"] == "fail"}
    assert failed == {"no findings at or above warning", "gpu_total_ms.p50 <= 2000"}
    r = invoke(
        [
            "check",
            logs["slow10"],
            "--baseline",
            logs["base"],
            "--config",
            str(cfg),
            "--fail-on",
            "error",
            "--gate",
            "gpu_total_ms.p50 <= 4000",
            "--format",
            "json",
        ]
    )
    assert r.exit_code == ExitCode.OK, r.output  # +9% is within the configured +20%
    assert "regression gpu_total_ms.p50 +20%" in gates_of(r)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gate", "s_per_proof < forty"], "cannot parse gate"),
        (["--gate", "s_per_prof <= 40"], "did you mean s_per_proof"),
        (["--regression", "gpu_total_ms.p50 +5%"], "cannot parse regression"),
        (["--config", "/nonexistent/cuzk.toml"], "not found"),
    ],
)
def test_usage_errors_exit_2(logs, args, message):
    r = invoke(["check", logs["base"], *args])
    assert r.exit_code == ExitCode.USAGE
    assert message in r.stderr
    assert r.stdout == ""


def test_declared_gate_on_unmeasured_metric_exits_2(logs):
    # Phase 9-11 code prints no mutex_wait_ms (that arrives with V11)
    r = invoke(["check", logs["base"], "--gate", "mutex_wait_ms.p50 <= 5", "--format", "json"])
    assert r.exit_code == ExitCode.USAGE
    assert gates_of(r)["mutex_wait_ms.p50 <= 5"]["status"] == "error"


def test_compare_json(logs):
    r = invoke(["compare", logs["base"], logs["slow10"], "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    stages = {s["field"]: s for s in d["stages"]}
    assert stages["batch_add_ms"]["significant"] and stages["batch_add_ms"]["verdict"] == "slower"
    assert stages["gpu_total_ms"]["significant"]
    assert stages["batch_add_ms"]["delta_p50"] == pytest.approx(0.395, abs=0.05)
    assert stages["tail_msm_ms"]["verdict"] == "same"
    assert d["shape"]["baseline"]["era"] == "phase9-11"


def test_compare_findings_in_one_run_only(logs):
    d = json.loads(invoke(["compare", logs["base"], logs["fallback"], "--format", "json"]).stdout)
    assert "CZ101" in {f["code"] for f in d["findings"]["new"]}


def test_compare_console_and_markdown(logs):
    r = invoke(["compare", logs["base"], logs["slow10"]])
    assert r.exit_code == 0
    assert "batch_add_ms" in r.stdout and "▲ slower" in r.stdout
    r = invoke(["compare", logs["base"], logs["slow10"], "--format", "markdown"])
    assert "| `batch_add_ms` |" in r.stdout


def test_compare_refuses_different_shape(logs):
    r = invoke(["compare", logs["base"], logs["gw2"]])
    assert r.exit_code == ExitCode.USAGE
    assert "GPU workers per GPU (gw): 1 (baseline) vs 2 (candidate)" in r.stderr
    assert invoke(["compare", logs["base"], logs["gw2"], "--allow-different-config"]).exit_code == 0


def test_github_reporter_for_an_analysis(logs):
    import io

    from cuzk_diag.analysis import analyze

    buf = io.StringIO()
    github.render(analyze([logs["fallback"]]), buf)
    lines = buf.getvalue().splitlines()
    assert any(line.startswith("::warning title=CZ101 ") for line in lines)
    assert lines[-1].startswith("cuzk-diag: ")


SIM_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sim"


@pytest.mark.parametrize(
    ("name", "code", "failed"),
    [
        ("healthy-main", ExitCode.OK, set()),
        (
            "incident",
            ExitCode.FINDINGS,
            {"no findings at or above error", "prestage_fallback.rate == 0"},
        ),
    ],
)
def test_shipped_sim_fixtures(name, code, failed):
    path = SIM_FIXTURES / f"{name}.log"
    if not path.exists():
        pytest.skip(f"{path} not generated")
    r = invoke(["check", str(path), "--gate", "prestage_fallback.rate == 0", "--format", "json"])
    assert r.exit_code == code, r.output
    assert {g["name"] for g in json.loads(r.stdout)["gates"] if g["status"] == "fail"} == failed


def test_parquet_export_as_candidate(logs, tmp_path):
    export = tmp_path / "base.parquet"
    assert invoke(["export", logs["base"], "-o", str(export), "-q"]).exit_code == 0
    r = invoke(["check", str(export), "--baseline", logs["base"], "--format", "json"])
    assert r.exit_code == ExitCode.OK, r.output
    reg = gates_of(r)["regression gpu_total_ms.p50 +5%"]["evidence"]
    assert reg["change"] == 0 and reg["p_value"] > 0.5
    r = invoke(["check", str(export), logs["base"]])
    assert r.exit_code == ExitCode.USAGE and "Parquet export" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["check", "slow10", "--baseline", "base", "--format", "json"],
        ["check", "no_timing", "--baseline", "base", "--format", "json"],  # candidate unusable
        ["check", "base", "--baseline", "no_timing", "--format", "json"],  # baseline unusable
        ["compare", "base", "slow10", "--format", "json"],
        ["compare", "base", "no_timing", "--format", "json"],
    ],
)
def test_two_runs_side_by_side_give_what_one_process_gives(logs, args):
    from cuzk_diag.ingest.parallel import ChildCall

    argv = [logs.get(a, a) for a in args]
    one = invoke([*argv, "-j", "1"])
    started = ChildCall.started
    two = invoke([*argv, "-j", "2"])
    assert ChildCall.started == started + 1  # the second run was read in a child
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)
    if "no_timing" in args:
        assert one.exit_code == ExitCode.USAGE and "no GPU calls" in one.stderr


def test_a_run_read_in_a_child_reports_its_progress_here(logs):
    from cuzk_diag.cli.check import run_metrics
    from cuzk_diag.config import Config
    from cuzk_diag.ingest.parallel import call_in_child

    seen: list[int] = []
    child = call_in_child(run_metrics, [logs["base"]], Config(), quiet=True, progress=seen.append)
    metrics = child.result()
    assert metrics.n_calls > 50
    assert seen and sum(seen) == Path(logs["base"]).stat().st_size
