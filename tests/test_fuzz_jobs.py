"""``tools/fuzz_jobs.py``: damaged copies of a log read with one process and with several."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cuzk_diag.ingest import parallel, split
from test_split import _parts_of, _reports, _sim_log

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fuzz_jobs", ROOT / "tools" / "fuzz_jobs.py")
assert _spec is not None and _spec.loader is not None
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["fuzz_jobs"] = fuzz  # (its dataclass looks its module up)
_spec.loader.exec_module(fuzz)

LOG = ROOT / "fixtures" / "sim" / "era-main.log"


def test_a_seed_gives_one_damaged_copy_and_another_seed_another() -> None:
    text = LOG.read_bytes()
    a, done_a = fuzz.mutate(text, 7, (5, 10))
    again, done_again = fuzz.mutate(text, 7, (5, 10))
    b, _ = fuzz.mutate(text, 8, (5, 10))
    assert (a, done_a) == (again, done_again)
    assert a != text and b != a
    assert 5 <= len(done_a) <= 10 and set(done_a) <= set(fuzz.MUTATIONS)


def test_every_damage_changes_the_lines_it_is_given() -> None:
    lines = LOG.read_bytes().split(b"\n")
    for name, damage in fuzz.MUTATIONS.items():
        for seed in range(20):  # (a shuffle may give the order back, a swap may not fit)
            copy = list(lines)
            damage(copy, fuzz.random.Random(seed), 40)
            if copy != lines:
                break
        else:
            pytest.fail(f"{name} left the lines as they were")


@pytest.mark.parametrize(
    ("text", "lines"),
    [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"\n\n", 2), (b"a\r\nb\n", 2)],
)
def test_physical_lines_are_counted_as_the_accounting_counts_them(text: bytes, lines: int) -> None:
    assert fuzz.physical_lines(text) == lines


def _report(lines: int, findings: int = 0) -> bytes:
    return json.dumps({"accounting": {"lines_total": lines}, "findings": [0] * findings}).encode()


def test_what_the_runs_of_a_copy_must_agree_on() -> None:
    ok = fuzz.Outcome(0, "", _report(10))
    assert fuzz.problems("analyze", ok, fuzz.Outcome(0, "", _report(10)), 10) == []
    assert fuzz.problems("analyze", ok, fuzz.Outcome(0, "", _report(10, 1)), 10) == [
        "the JSON reports differ"
    ]
    assert fuzz.problems("analyze", ok, ok, 11) == ["11 physical lines, 10 counted"]
    assert fuzz.problems("analyze", ok, fuzz.Outcome(1, "", _report(10)), 10) == [
        "exit codes differ: 0 with one process, 1 with several"
    ]
    crash = fuzz.Outcome(3, "Traceback (most recent call last):\n  boom", b"")
    found = fuzz.problems("analyze", ok, crash, 10)
    assert found[0].startswith("--jobs N failed inside (exit 3)") and "boom" in found[0]


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def test_exports_must_hold_the_same_table_and_metadata() -> None:
    t = pa.table({"a": [1, 2]})
    same = fuzz.Outcome(0, "", _parquet(t))
    assert fuzz.problems("export", same, fuzz.Outcome(0, "", _parquet(t)), 0) == []
    other = fuzz.Outcome(0, "", _parquet(pa.table({"a": [1, 3]})))
    assert fuzz.problems("export", same, other, 0) == ["the exported tables differ"]
    meta = fuzz.Outcome(0, "", _parquet(t.replace_schema_metadata({"k": "v"})))
    assert fuzz.problems("export", same, meta, 0) == ["the exports' metadata differ"]
    assert fuzz.problems("export", same, fuzz.Outcome(2, "", b""), 0) == [
        "exit codes differ: 0 with one process, 2 with several",
        "only one of the runs wrote its export",
    ]


def test_a_run_of_the_script_reads_each_copy_both_ways(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "base.log"
    log.write_bytes(LOG.read_bytes())
    code = fuzz.main(["--log", str(log), "--seeds", "3-4", "--mutations", "2-3"])
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "seed 3:" in out and "seed 4:" in out
    assert "2 of 2 seeds gave the same output with --jobs 1 and --jobs 2" in out
    assert "fewer than the" in err  # (a fixture is too small to be cut: said)
    assert log.read_bytes() == LOG.read_bytes()  # (the log given is left as it is)


def test_ranges_of_seeds_are_read_or_refused() -> None:
    assert fuzz.span("3") == (3, 3)
    assert fuzz.span("1-20") == (1, 20)
    for bad in ("x", "5-2", "-1"):
        with pytest.raises(fuzz.argparse.ArgumentTypeError):
            fuzz.span(bad)


def test_a_copy_whose_runs_disagree_is_kept_and_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(command: str, log: Path, jobs: int, out: Path) -> object:
        report = _report(fuzz.physical_lines(log.read_bytes()), findings=jobs)
        out.write_bytes(report)
        return fuzz.Outcome(0, "", report)

    monkeypatch.setattr(fuzz, "run", run)
    keep = tmp_path / "kept"
    code = fuzz.main(["--log", str(LOG), "--seeds", "5", "--keep", str(keep)])
    out = capsys.readouterr().out
    assert code == 1
    assert "seed 5:" in out and "FAILED: the JSON reports differ" in out
    assert "0 of 1 seeds gave the same output" in out and str(keep) in out
    assert sorted(p.name for p in keep.iterdir()) == [
        "seed-5.jobs1.json",
        "seed-5.jobs2.json",
        "seed-5.log",
    ]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_damaged_copies_cut_into_parts_give_one_process_reports(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script's damages at the tests' scale: a simulated log of 1.5 MB cut as one of
    hundreds of MB is (parts, warm-ups and chunks made small), read by real children: the
    same report with one process, two and three, and every line counted."""
    text, done = fuzz.mutate(_sim_log(tmp_path, 1.5).read_bytes(), seed, (10, 20))
    log = tmp_path / "damaged.log"
    log.write_bytes(text)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    started, outcomes = parallel.ChildCall.started, sum(split.outcomes.values())
    reports = _reports(log, ("1", "2", "3"), tmp_path)
    assert parallel.ChildCall.started > started  # (the parts were read by children)
    assert reports[0] == reports[1] == reports[2], done
    counted = json.loads(reports[0])["accounting"]["lines_total"]
    assert counted == fuzz.physical_lines(text), done
    # (Each run cut the file: its child's part taken, read here, or, with a call or block
    # left open by the damage, the rest read here once the first part showed it.)
    assert sum(split.outcomes.values()) >= outcomes + 2
