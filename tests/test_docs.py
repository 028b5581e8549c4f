"""Docs as tests: every command has help, every rule is documented, docs/rules.md is current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cuzk_diag.cli import cli
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.rules import COMMON_EVIDENCE, DOC_SECTIONS, all_rules, render_rules_markdown

ROOT = Path(__file__).resolve().parents[1]
RULES = all_rules()


def _commands() -> list[str]:
    return sorted(cli.commands)


def test_expected_commands_are_registered() -> None:
    assert {"analyze", "rules", "explain"} <= set(_commands())


@pytest.mark.parametrize("name", _commands())
def test_every_command_has_help(name: str) -> None:
    cmd = cli.commands[name]
    assert (cmd.help or "").strip(), f"{name} has no docstring help"
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: cli {name}" in result.output or "Usage:" in result.output
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"{name} {param.opts} has no help text"


def test_group_help() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0 and "Exit codes" in result.output


# -- rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_has_every_doc_section(rule) -> None:  # type: ignore[no-untyped-def]
    sections = rule.sections()
    assert list(sections)[: len(DOC_SECTIONS)] == list(DOC_SECTIONS)
    for name in DOC_SECTIONS:
        assert len(sections[name]) > 40, f"{rule.code}: section {name!r} is too thin"
    assert "```" in sections["Example log lines"]
    assert rule.title and not rule.title.endswith(".")
    for opt in rule.options:
        assert opt.help, f"{rule.code}: option {opt.name} undocumented"
        assert f"`{opt.name}`" in rule.doc(), f"{rule.code}: option {opt.name} not explained"
    assert all(rule.evidence.values())
    assert not set(rule.evidence) & set(COMMON_EVIDENCE)


def test_codes_and_slugs_are_unique_and_stable() -> None:
    assert len({r.code for r in RULES}) == len({r.name for r in RULES}) == len(RULES)
    required = {
        "prestage-fallback",
        "pre-destructor-gap",
        "lock-wait",
        "cpu-critical-path",
        "benchmark-shape",
        "proving-failures",
        "log-coverage",
    }
    assert required <= {r.name for r in RULES}


def test_rules_md_is_current() -> None:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert text == render_rules_markdown(), "run: python tools/gen_rules_doc.py"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_rules_doc.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


# -- rules / explain commands ---------------------------------------------------------------------


def test_rules_text() -> None:
    result = CliRunner().invoke(cli, ["rules"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert len(lines) == len(RULES)
    assert lines[0].split()[:3] == ["CZ101", "prestage-fallback", "error"]


def test_rules_json() -> None:
    result = CliRunner().invoke(cli, ["rules", "--format", "json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert [d["code"] for d in data] == [r.code for r in RULES]
    lock = next(d for d in data if d["name"] == "lock-wait")
    assert {"name": "queue_ratio", "default": 1.5}.items() <= lock["options"][1].items()
    assert "affected" in lock["evidence"]


@pytest.mark.parametrize("ref", ["CZ202", "cz202", "lock-wait"])
def test_explain_by_code_or_slug(ref: str) -> None:
    result = CliRunner().invoke(cli, ["explain", ref])
    assert result.exit_code == 0
    out = result.output
    assert out.startswith("# CZ202 `lock-wait`")
    for section in (*DOC_SECTIONS, "Options", "Evidence"):
        assert f"## {section}" in out
    for opt in ("min_wait_ms", "queue_ratio", "held_ratio", "held_excess_ms", "kernel_share"):
        assert f"`{opt}`" in out


def test_explain_unknown_rule_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["explain", "prestage-falback"])
    assert result.exit_code == ExitCode.USAGE
    assert "unknown rule 'prestage-falback'" in result.output
    assert "prestage-fallback" in result.output  # the suggestion
