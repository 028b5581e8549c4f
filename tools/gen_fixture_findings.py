"""Regenerate the golden findings of simulated fixtures: ``fixtures/sim/NAME.findings.json``.

Usage (from the repository root)::

    python tools/gen_fixture_findings.py            # report goldens that differ
    python tools/gen_fixture_findings.py --update   # rewrite them
    python tools/gen_fixture_findings.py --check    # exit 1 if a golden is stale

A golden holds the command and the findings ``cuzk-diag analyze`` reports on the fixture with
every rule at its default thresholds (``fixtures/rules/defaults.toml``), each finding reduced to
``code name severity message evidence lines`` as in ``fixtures/rules/``. ``REQUIRED`` names the
findings each fixture exists for; the tool refuses to write a golden that lacks one.
``tests/test_rules_golden.py`` compares the goldens with the current output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tools")]

from click.testing import CliRunner  # noqa: E402
from gen_rule_fixtures import DEFAULTS, findings_of, rel  # noqa: E402

from cuzk_diag.cli import cli  # noqa: E402

SIM_DIR = ROOT / "fixtures" / "sim"
#: fixture name -> rule codes that must be among its findings.
REQUIRED: dict[str, tuple[str, ...]] = {
    # Phase 12 and pool-cache code on 2 GPUs x gw=2, 4 proofs in flight: the workers of each GPU
    # queue on its mutex, which neither version logs; lock-wait reports the clock estimate.
    "phase12-2gpu-gw2": ("CZ202",),
    "pool-cache-2gpu-gw2": ("CZ202",),
}


def log_path(name: str) -> Path:
    return SIM_DIR / f"{name}.log"


def golden_path(name: str) -> Path:
    return SIM_DIR / f"{name}.findings.json"


def command(name: str) -> list[str]:
    """The analyze arguments (after ``cuzk-diag``) whose findings are the golden."""
    return ["analyze", rel(log_path(name)), "--format", "json", "--config", rel(DEFAULTS)]


def analyze(name: str) -> list[dict[str, Any]]:
    """The golden part of the JSON report on the fixture."""
    result = CliRunner().invoke(cli, command(name))
    if result.exit_code != 0:
        raise RuntimeError(f"cuzk-diag {' '.join(command(name))} exited {result.exit_code}")
    return findings_of(result.stdout)


def golden_text(name: str, findings: list[dict[str, Any]]) -> str:
    doc = {"command": "cuzk-diag " + " ".join(command(name)), "findings": findings}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def build() -> dict[Path, bytes]:
    """Every golden, computed from the fixture logs on disk; raises if a required one is absent."""
    out: dict[Path, bytes] = {}
    for name, required in REQUIRED.items():
        findings = analyze(name)
        missing = set(required) - {f["code"] for f in findings}
        if missing:
            raise SystemExit(f"{name}: {', '.join(sorted(missing))} not found")
        out[golden_path(name)] = golden_text(name, findings).encode()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="rewrite the goldens")
    mode.add_argument("--check", action="store_true", help="compare, write nothing")
    a = ap.parse_args(argv)
    goldens = build()
    stale = [p for p, d in goldens.items() if not p.exists() or p.read_bytes() != d]
    for p in stale:
        if a.update:
            p.write_bytes(goldens[p])
            print(f"wrote {rel(p)}")
        else:
            hint = "" if a.check else " (review, then rerun with --update)"
            print(f"stale: {rel(p)}{hint}", file=sys.stderr)
    return 1 if stale and not a.update else 0


if __name__ == "__main__":
    raise SystemExit(main())
