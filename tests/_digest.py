"""Digests of everything the ingest path produces, for the differential test of ingest.

For one log: the partition records field for field (attribution labels included), the run info,
the accounting, the line table of ``export --lines`` and the JSON report of ``analyze
--no-estimates`` (live mode's final report equals it: ``tests/test_live.py``). Each is reduced
to a SHA-256 of a canonical JSON form, with the record and line counts kept in clear so that a
difference is easy to place. The inputs are every log under ``fixtures/`` and the simulated
runs of ``tools/accuracy.py --sweep 8``.

    PYTHONPATH=src python tests/_digest.py --update   # rewrite tests/data/ingest_digest.json
    PYTHONPATH=src python tests/_digest.py --check    # print the inputs that differ
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIGESTS = ROOT / "tests" / "data" / "ingest_digest.json"
SWEEP_SEEDS = 8


def _canon(v: Any) -> Any:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_canon(x) for x in v]
    return v if v is None or isinstance(v, bool | int | str) else str(v)


def sha(obj: Any) -> str:
    text = json.dumps(_canon(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def fixture_logs() -> list[Path]:
    """Every log under fixtures/, compressed ones included."""
    return sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file() and ".log" in p.name)


def sweep_logs(tmp: Path) -> Iterator[Path]:
    """The simulated runs of ``tools/accuracy.py --sweep 8``, written under ``tmp``."""
    sys.path.insert(0, str(ROOT / "tools"))
    import accuracy

    from cuzk_diag.model.daemon import SimConfig, simulate

    configs = [
        (f"sweep/{era}-gw{gw}-g{g}-s{seed}", accuracy.sweep_config(era, gw, g, seed))
        for era in accuracy.ERAS
        for gw in (1, 2, 3)
        for g in (1, 2)
        for seed in range(SWEEP_SEEDS)
    ]
    configs += [
        (f"sweep/{kw['era']}-extra-s{seed}", SimConfig(**kw, seed=seed))
        for kw in accuracy.EXTRA_CELLS
        for seed in range(SWEEP_SEEDS)
    ]
    for name, cfg in configs:
        path = tmp / (name.replace("/", "_") + ".log")
        sim = simulate(cfg)
        assert sim.data is not None
        path.write_bytes(sim.data)
        yield path


def digest(path: Path) -> dict[str, Any]:
    """The digests of one log (run from the project root, so paths in reports are stable)."""
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from cuzk_diag.cli import cli
    from cuzk_diag.pipeline import load_run

    run = load_run([str(path)])
    assert run.table is not None
    records = run.table.to_pylist()
    out: dict[str, Any] = {
        "records": len(records),
        "records_sha": sha(records),
        "info_sha": sha(run.info.to_dict()),
        "accounting_sha": sha(run.accounting.to_dict()),
        "lines_total": run.accounting.lines_total,
    }
    runner = CliRunner()
    lines = path.with_name(path.name + ".lines.parquet")
    r = runner.invoke(cli, ["export", "--lines", str(path), "-o", str(lines), "-q"])
    assert r.exit_code == 0, r.output
    try:
        table = pq.read_table(lines)
        out["line_rows"] = table.num_rows
        out["lines_sha"] = sha(table.to_pylist())
    finally:
        lines.unlink()
    # the report as ingest makes it: no model estimates (they are the daemon model's output)
    r = runner.invoke(cli, ["analyze", str(path), "--format", "json", "--no-estimates"])
    report = json.loads(r.stdout)
    report.pop("tool", None)
    out["report_sha"] = sha(report)
    out["analyze_exit"] = r.exit_code
    return out


def digest_all(tmp: Path) -> dict[str, dict[str, Any]]:
    """Digests of every input, each read by a path relative to the working directory (the
    project root for fixtures, ``tmp`` for the sweep), as the reports quote it."""
    import os

    here = os.getcwd()
    result = {}
    try:
        os.chdir(ROOT)
        for p in fixture_logs():
            name = str(p.relative_to(ROOT))
            result[name] = digest(Path(name))
        os.chdir(tmp)
        for p in sweep_logs(tmp):
            result[p.name] = digest(Path(p.name))
    finally:
        os.chdir(here)
    return result


def main(argv: list[str]) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        now = digest_all(Path(tmp))
    if argv[:1] == ["--update"]:
        DIGESTS.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(now)} digests to {DIGESTS.relative_to(ROOT)}")
        return 0
    want = json.loads(DIGESTS.read_text())
    bad = [n for n in sorted(set(want) | set(now)) if want.get(n) != now.get(n)]
    for n in bad:
        w, g = want.get(n, {}), now.get(n, {})
        print(n, {k: (w.get(k), g.get(k)) for k in sorted(set(w) | set(g)) if w.get(k) != g.get(k)})
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
