"""The CLI's contract under hostile or careless use: exit codes a CI can trust, one error form,
damaged input read as far as it goes, signals that still leave a report."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cuzk_diag.cli import cli
from cuzk_diag.exit_codes import ExitCode

ROOT = Path(__file__).resolve().parent.parent
INCIDENT = ROOT / "fixtures" / "sim" / "incident.log"  # CZ101 at error level: `check` fails
HEALTHY = ROOT / "fixtures" / "sim" / "gw2.log"  # `check` passes
EXAMPLE = ROOT / "fixtures" / "example.log"


def invoke(*args: str, input: bytes | str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def cuzk(*args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    """The installed command as a CI runs it (a real process, real pipes)."""
    return subprocess.run(
        [sys.executable, "-m", "cuzk_diag", *args], capture_output=True, timeout=120, **kw
    )


def assert_error_form(stderr: str) -> None:
    assert stderr.startswith("cuzk-diag: error: "), stderr
    assert "Error:" not in stderr and "Traceback" not in stderr, stderr


# -- a broken pyproject.toml ----------------------------------------------------------------


@pytest.mark.parametrize(
    "content,where",
    [
        (b'[tool.cuzk-diag]\nfail-on = "warning\n', "line 2"),  # unterminated string
        (b'[tool.cuzk-diag]\nfail-on = "w\xe9"\n', "line 2"),  # Latin-1, not UTF-8
    ],
    ids=["syntax", "not-utf8"],
)
@pytest.mark.parametrize("level", ["cwd", "parent"])
def test_a_broken_pyproject_is_an_error_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, where: str, level: str
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_bytes(content)
    cwd = tmp_path if level == "cwd" else tmp_path / "sub" / "dir"
    cwd.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(cwd)
    for command in (["check", str(HEALTHY)], ["analyze", str(HEALTHY)]):
        code, out, err = invoke(*command)
        assert code == ExitCode.USAGE, (command, err)
        assert_error_form(err)
        assert str(pyproject) in err and where in err, err
        assert out == ""


# -- one error form ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["check", str(HEALTHY), "--no-such-option"],
        ["check", "no-such.log"],
        ["compare", str(HEALTHY), "no-such.log"],
        ["compare", str(HEALTHY)],
        ["explain", "CZ999"],
        ["analyze", str(HEALTHY), "--select", "CZ9"],
        ["analyze", str(HEALTHY), "--format", "yaml"],
        ["export", str(HEALTHY), "-o", "/nonexistent/dir/x.parquet"],
        ["export", str(HEALTHY), "-o", "/nonexistent/dir/x.csv"],
        ["analyze", str(HEALTHY), "-o", "/nonexistent/dir/report.txt"],
        ["check", str(HEALTHY), "--junit", "/nonexistent/dir/junit.xml"],
        ["no-such-command"],
    ],
)
def test_every_user_error_is_exit_2_in_one_form(args: list[str]) -> None:
    code, out, err = invoke(*args)
    assert code == ExitCode.USAGE, err
    assert_error_form(err)


def test_an_output_directory_that_does_not_exist_is_named(tmp_path: Path) -> None:
    proc = cuzk("export", str(HEALTHY), "-o", str(tmp_path / "missing" / "x.parquet"))
    assert proc.returncode == ExitCode.USAGE
    err = proc.stderr.decode()
    assert_error_form(err)
    assert f"directory {tmp_path / 'missing'} does not exist" in err
