"""`cuzk-diag analyze` end to end on simulated daemon logs (file and stdin)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("cuzk_diag.pipeline")
sim = pytest.importorskip("cuzk_diag.model.daemon")

from cuzk_diag.cli import cli  # noqa: E402
from cuzk_diag.exit_codes import ExitCode  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("logs")
    out = {}
    for name, cfg in {
        # the Phase 10 test: Phase 9-11 code, gw=3, a single proof, every partition skip_vram
        "incident": sim.SimConfig(
            era="phase9-11", gw=3, proofs=1, concurrency=1, force_skip_vram=True, seed=3
        ),
        # main code, gw=2, 20 proofs in flight, synthesis fast enough to keep the GPU busy
        "healthy": sim.SimConfig(
            era="main", gw=2, pw=20, proofs=20, concurrency=20, seed=4, durations={"synth": 8000}
        ),
    }.items():
        path = d / f"{name}.log"
        sim.write_log(cfg, str(path), truth=False)
        out[name] = path
    return out


def run(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def findings(stdout: str) -> list[str]:
    return [f["code"] for f in json.loads(stdout)["findings"]]


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_incident_json(logs: dict[str, Path], source: str) -> None:
    path = logs["incident"]
    if source == "file":
        code, out, _ = run("analyze", str(path), "--format", "json")
    else:
        code, out, _ = run("analyze", "-", "--format", "json", input=path.read_bytes())
    assert code == ExitCode.OK
    doc = json.loads(out)
    by_code = {f["code"]: f for f in doc["findings"]}
    assert by_code["CZ101"]["severity"] == "error"
    assert by_code["CZ101"]["message"].startswith("Every partition (10 of 10) fell back")
    assert by_code["CZ201"]["evidence"]["dominant"] == "lock_wait"
    assert by_code["CZ202"]["evidence"]["kind"] == ["queueing"]
    assert "single_proof_contended" in by_code["CZ501"]["evidence"]["kind"]
    assert doc["facts"]["gw"] == 3 and doc["facts"]["proofs"] == 1


def test_healthy_console_has_no_warnings(logs: dict[str, Path]) -> None:
    code, out, err = run("analyze", str(logs["healthy"]), "--fail-on", "warning")
    assert code == ExitCode.OK, out
    assert "0 errors, 0 warnings" in out and not ANSI.search(out)
    assert err == ""


def test_fail_on(logs: dict[str, Path]) -> None:
    assert run("analyze", str(logs["incident"]), "--fail-on", "error")[0] == ExitCode.FINDINGS
    assert run("analyze", str(logs["incident"]), "--fail-on", "WARNING")[0] == ExitCode.FINDINGS
    assert run("analyze", str(logs["incident"]))[0] == ExitCode.OK  # off unless given
    code, _, _ = run("analyze", str(logs["incident"]), "--fail-on", "error", "--ignore", "CZ101")
    assert code == ExitCode.OK


def test_select_and_ignore(logs: dict[str, Path]) -> None:
    _, out, _ = run(
        "analyze",
        str(logs["incident"]),
        "--format",
        "json",
        "--select",
        "CZ1,lock-wait",
        "--select",
        "CZ5",
        "--ignore",
        "CZ101",
    )
    assert findings(out) == ["CZ202", "CZ501"]


def test_output_file_and_formats(logs: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    code, out, err = run(
        "analyze", str(logs["incident"]), "--format", "markdown", "-o", str(target)
    )
    assert code == ExitCode.OK and out == ""
    assert target.read_text(encoding="utf-8").startswith("# cuzk-diag:")
    assert "wrote markdown report" in err


def test_color_flag(logs: dict[str, Path]) -> None:
    assert ANSI.search(run("analyze", str(logs["incident"]), "--color", "always")[1])
    assert not ANSI.search(run("analyze", str(logs["incident"]), "--color", "never")[1])


def test_config_file_and_pyproject(
    logs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "diag.toml"
    cfg.write_text('fail-on = "error"\n[rules.prestage-fallback]\nerror_share = 1.0\n')
    code, out, _ = run("analyze", str(logs["incident"]), "--config", str(cfg), "--format", "json")
    assert code == ExitCode.OK  # the fallback is only a warning now
    assert json.loads(out)["findings"][0]["severity"] == "warning"
    (tmp_path / "pyproject.toml").write_text('[tool.cuzk-diag]\nignore = ["CZ1", "CZ5"]\n')
    monkeypatch.chdir(tmp_path)
    _, out, _ = run("analyze", str(logs["incident"]), "--format", "json")
    assert findings(out) == ["CZ201", "CZ202"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "missing.log"], "does not exist"),
        (["analyze", "{log}", "--select", "CZ9"], "'CZ9' matches no rule"),
        (["analyze", "{log}", "--config", "nope.toml"], "config file not found"),
        (["analyze", "{log}", "--format", "xml"], "Invalid value for '--format'"),
        (["analyze", "-", "-"], "stdin (-) can be read only once"),
        (["analyze"], "Missing argument"),
    ],
)
def test_usage_errors_exit_2(logs: dict[str, Path], args: list[str], message: str) -> None:
    argv = [a.replace("{log}", str(logs["incident"])) for a in args]
    result = CliRunner().invoke(cli, argv, input=b"")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert message in result.output


def test_no_gpu_call_prints_the_report_then_exits_2(tmp_path: Path) -> None:
    p = tmp_path / "other.log"
    p.write_text("hello\nworld\n")
    code, out, err = run("analyze", str(p), "--format", "json")
    assert code == ExitCode.USAGE
    assert err.startswith("cuzk-diag: error: ") and "no GPU calls found" in err
    assert findings(out) == ["CZ701"]


def test_main_returns_exit_codes(logs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from cuzk_diag.cli import main

    assert main(["analyze", str(logs["incident"]), "--fail-on", "error", "--format", "json"]) == 1
    assert main(["analyze", str(logs["healthy"]), "--format", "json"]) == 0
    assert main(["explain", "CZ999"]) == 2
    capsys.readouterr()
