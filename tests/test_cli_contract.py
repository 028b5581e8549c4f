"""The CLI's contract under hostile or careless use: exit codes a CI can trust, one error form,
damaged input read as far as it goes, signals that still leave a report."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

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


# -- a closed stdout keeps the verdict ------------------------------------------------------


def closed_stdout(*args: str) -> tuple[int, str]:
    """Run with stdout a pipe whose reader is gone before anything is written (`| true`)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cuzk_diag", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(120), err


@pytest.mark.parametrize(
    "args,verdict",
    [
        (["check", str(INCIDENT)], ExitCode.FINDINGS),
        (["check", str(INCIDENT), "--format", "github"], ExitCode.FINDINGS),
        (["check", str(INCIDENT), "--format", "json"], ExitCode.FINDINGS),
        (["check", str(HEALTHY)], ExitCode.OK),
        (["analyze", str(INCIDENT), "--fail-on", "error", "--color", "never"], ExitCode.FINDINGS),
        (["analyze", str(INCIDENT), "--fail-on", "error", "--format", "json"], ExitCode.FINDINGS),
        (["analyze", str(HEALTHY), "--fail-on", "error"], ExitCode.OK),
    ],
)
def test_a_closed_stdout_keeps_the_verdict(args: list[str], verdict: int) -> None:
    code, err = closed_stdout(*args)
    assert code == verdict, err
    assert err == "", err  # the output ends quietly


def test_a_closed_stdout_keeps_the_verdict_under_pipefail(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    script = (
        f"set -o pipefail; {sys.executable} -m cuzk_diag check {INCIDENT} --junit {junit} | true"
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == ExitCode.FINDINGS, proc.stderr
    assert 'failures="1"' in junit.read_text()  # the rest of the job's outputs still written


# -- unusable input, Parquet and UTF-16 input -----------------------------------------------


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "incident.parquet"
    code, _, err = invoke("export", str(INCIDENT), "-o", str(path), "-q")
    assert code == ExitCode.OK, err
    return path


def test_analyze_refuses_input_with_nothing_to_diagnose(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "core.bin"
    binary.write_bytes(bytes(range(256)) * 64 + b"\n\x00\xff\xfe" * 500)
    for path, why in ((empty, "the input is empty"), (binary, "a binary file?")):
        for fmt in ("console", "json"):
            code, _, err = invoke("analyze", str(path), "--fail-on", "info", "--format", fmt)
            assert code == ExitCode.USAGE, err
            assert_error_form(err)
            assert why in err


def test_analyze_reads_a_parquet_export_as_check_does(export: Path) -> None:
    code, out, err = invoke("analyze", str(export), "--format", "json")
    assert code == ExitCode.OK, err
    doc = json.loads(out)
    code, out, _ = invoke("analyze", str(INCIDENT), "--format", "json")
    ref = json.loads(out)
    assert doc["facts"] == ref["facts"]
    assert [f["code"] for f in doc["findings"]] == [f["code"] for f in ref["findings"]]
    assert invoke("analyze", str(export), "--fail-on", "error")[0] == ExitCode.FINDINGS


def test_a_parquet_export_mixed_with_logs_or_on_stdin_is_refused_clearly(export: Path) -> None:
    code, _, err = invoke("analyze", str(export), str(INCIDENT))
    assert code == ExitCode.USAGE and "give it alone" in err
    assert_error_form(err)
    code, _, err = invoke("analyze", "-", input=export.read_bytes())
    assert code == ExitCode.USAGE and "is a Parquet export" in err
    code, _, err = invoke("export", "--lines", str(export), "-o", "-", "--format", "csv")
    assert code == ExitCode.USAGE and "--lines needs the log" in err


def test_export_converts_a_parquet_export(export: Path, tmp_path: Path) -> None:
    from_log = tmp_path / "from-log.jsonl"
    from_export = tmp_path / "from-export.jsonl"
    assert invoke("export", str(INCIDENT), "-o", str(from_log), "-q")[0] == ExitCode.OK
    assert invoke("export", str(export), "-o", str(from_export), "-q")[0] == ExitCode.OK
    rows = [json.loads(x) for x in from_export.read_text().splitlines()]
    assert len(rows) == 10
    assert sorted(rows, key=lambda r: r["record"]) == sorted(
        (json.loads(x) for x in from_log.read_text().splitlines()), key=lambda r: r["record"]
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"])
def test_utf16_and_bom_logs_are_decoded(tmp_path: Path, encoding: str) -> None:
    log = tmp_path / "daemon.log"
    log.write_bytes(INCIDENT.read_text(encoding="utf-8").encode(encoding))
    code, out, err = invoke("analyze", str(log), "--format", "json")
    assert code == ExitCode.OK, err
    _, ref, _ = invoke("analyze", str(INCIDENT), "--format", "json")
    doc, ref_doc = json.loads(out), json.loads(ref)
    assert doc["facts"] == ref_doc["facts"]
    assert doc["accounting"]["lines_total"] == ref_doc["accounting"]["lines_total"]
    assert doc["accounting"]["by_family"] == ref_doc["accounting"]["by_family"]
    assert doc["accounting"]["decode_errors"] == 0


def test_a_utf8_log_that_begins_with_nuls_between_letters_is_read_as_utf8(tmp_path: Path) -> None:
    # Its first four bytes look like UTF-16 without a byte-order mark; the rest of its first
    # line does not: a file, stdin (live mode) and a pipe given by name read it as UTF-8.
    log = tmp_path / "daemon.log"
    log.write_bytes(b"a\0b\0 junk before the daemon's first line\n" + INCIDENT.read_bytes())
    ref = json.loads(invoke("analyze", str(INCIDENT), "--format", "json")[1])
    runs = {
        "file": cuzk("analyze", str(log), "--format", "json", "-q"),
        "stdin": cuzk("analyze", "-", "--format", "json", "-q", input=log.read_bytes()),
        "pipe": subprocess.run(
            ["bash", "-c", f"{sys.executable} -m cuzk_diag analyze <(cat {log}) --format json -q"],
            capture_output=True,
            timeout=120,
        ),
    }
    for how, proc in runs.items():
        assert proc.returncode == ExitCode.OK, (how, proc.stderr)
        doc = json.loads(proc.stdout)
        acc, ref_acc = doc["accounting"], ref["accounting"]
        assert acc["lines_total"] == ref_acc["lines_total"] + 1, how
        assert acc["decode_errors"] == 0, how
        assert doc["facts"]["partitions"] == ref["facts"]["partitions"], how


def test_utf16_without_a_byte_order_mark_is_told_by_more_than_four_bytes() -> None:
    from cuzk_diag.sources import MAGIC_BYTES, TEXT, UTF16_BE, UTF16_LE, sample_size, sniff

    line = "2026-01-01T00:00:00Z INFO cuzk_server: engine started\n"
    for enc, kind in (("utf-16-le", UTF16_LE), ("utf-16-be", UTF16_BE)):
        data = line.encode(enc)
        assert sample_size(data[:MAGIC_BYTES]) > MAGIC_BYTES
        assert sniff(data[: sample_size(data)]) == kind
    junk = b"a\0b\0" + line.encode()
    assert sample_size(junk[:MAGIC_BYTES]) > MAGIC_BYTES
    assert sniff(junk[: sample_size(junk)]) == TEXT
    # A word of another script in a UTF-16 log's first units leaves it UTF-16.
    mixed = ("ab" + "\u00e9\u4e2d" + line).encode("utf-16-le")
    assert sniff(mixed[: sample_size(mixed)]) == UTF16_LE
    # An input of four bytes in all cannot tell more.
    assert sniff(b"a\0b\0") == UTF16_LE
    assert sample_size(line.encode()) == MAGIC_BYTES


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-8-sig"])
def test_a_compressed_utf16_or_bom_log_is_transcoded(
    tmp_path: Path, compression: str, encoding: str
) -> None:
    # The text inside a .gz or .zst is looked at as a plain input is: UTF-16 is transcoded and
    # a byte-order mark dropped, from a file and from stdin alike.
    import zstandard

    text = INCIDENT.read_text(encoding="utf-8").encode(encoding)
    packed = gzip.compress(text) if compression == "gzip" else zstandard.compress(text)
    log = tmp_path / "daemon.log.z"
    log.write_bytes(packed)
    _, ref, _ = invoke("analyze", str(INCIDENT), "--format", "json")
    ref_doc = json.loads(ref)
    for args, stdin in (([str(log)], None), (["-"], packed)):
        proc = cuzk("analyze", *args, "--format", "json", "-q", input=stdin)
        assert proc.returncode == ExitCode.OK, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["facts"]["partitions"] == ref_doc["facts"]["partitions"]
        assert doc["accounting"]["by_family"] == ref_doc["accounting"]["by_family"]
        assert doc["accounting"]["decode_errors"] == 0


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_compressed_data_damaged_from_its_start_is_reported_not_decoded(
    tmp_path: Path, compression: str
) -> None:
    # Looking at the decompressed text's first bytes meets the damage first: the input is
    # still read as far as it goes (nothing) and its damage reported, as before.
    magic = b"\x1f\x8b" if compression == "gzip" else b"\x28\xb5\x2f\xfd"
    log = tmp_path / "daemon.log.z"
    log.write_bytes(magic + b"\x07 this is no compressed data \xff\xfe" * 40)
    code, out, err = invoke("analyze", str(log), "--format", "json")
    assert "Traceback" not in err
    doc = json.loads(out)
    assert doc["accounting"]["lines_total"] == 0
    (reason,) = doc["accounting"]["truncated_inputs"].values()
    assert "compressed data" in reason, reason


# -- pipes and FIFOs are sniffed without losing bytes ---------------------------------------


def gates(stdout: bytes) -> dict[str, dict]:
    return {g["name"]: g for g in json.loads(stdout)["gates"]}


@pytest.mark.parametrize("baseline", ["log", "parquet"])
def test_a_pipe_as_baseline_loses_no_bytes(export: Path, baseline: str) -> None:
    base = INCIDENT if baseline == "log" else export
    ref = cuzk("check", str(INCIDENT), "--baseline", str(base), "--format", "json")
    script = (
        f"{sys.executable} -m cuzk_diag check {INCIDENT} --baseline <(cat {base}) --format json"
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == ref.returncode, proc.stderr
    got, want = gates(proc.stdout), gates(ref.stdout)
    assert {k: g["evidence"] for k, g in got.items()} == {k: g["evidence"] for k, g in want.items()}


def test_a_fifo_given_to_compare_is_read_whole(tmp_path: Path) -> None:
    fifo = tmp_path / "base.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {INCIDENT} > {fifo}"])
    try:
        proc = cuzk("compare", str(fifo), str(INCIDENT), "--format", "json")
    finally:
        writer.kill()
        writer.wait()
    assert proc.returncode == ExitCode.OK, proc.stderr
    doc = json.loads(proc.stdout)
    ref = json.loads(cuzk("compare", str(INCIDENT), str(INCIDENT), "--format", "json").stdout)
    assert doc["shape"] == ref["shape"] and doc["run"] == ref["run"]
    assert doc["stages"] == ref["stages"]


# -- truncated compressed logs ----------------------------------------------------------------


def _gzip_prefix(data: bytes) -> bytes:
    import zlib

    return zlib.decompressobj(wbits=31).decompress(data)


def _zstd_prefix(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


def _compressed(kind: str, data: bytes) -> bytes:
    if kind == "gz":
        return gzip.compress(data)
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize(
    "kind,fraction", [("gz", 0.5), ("gz", 0.9), ("zst", 0.9)], ids=["gz50", "gz90", "zst90"]
)
def test_a_truncated_compressed_log_is_read_as_far_as_it_goes(
    tmp_path: Path, kind: str, fraction: float
) -> None:
    whole = _compressed(kind, EXAMPLE.read_bytes())
    cut = whole[: int(len(whole) * fraction)]
    path = tmp_path / f"daemon.log.{kind}"
    path.write_bytes(cut)
    readable = (_gzip_prefix if kind == "gz" else _zstd_prefix)(cut)
    assert readable.count(b"\n") > 100  # the test is about a partial read, not an empty one

    for stdin in (False, True):  # a file (batch) and a pipe (live engine)
        args = ["analyze", "-" if stdin else str(path), "--format", "json"]
        code, out, err = invoke(*args, input=cut if stdin else None)
        assert code == ExitCode.OK, err
        doc = json.loads(out)
        acc = doc["accounting"]
        name = "<stdin>" if stdin else str(path)
        assert list(acc["truncated_inputs"]) == [name]
        assert "ends early" in acc["truncated_inputs"][name]
        # every whole line that can be decompressed is read; the cut last line is not
        assert acc["lines_total"] == readable.count(b"\n")
        cz701 = [f for f in doc["findings"] if f["code"] == "CZ701"]
        assert cz701 and cz701[0]["severity"] == "error"
        assert cz701[0]["evidence"]["truncated_inputs"] == acc["truncated_inputs"]

    # `check` fails on it by default; the complete file passes
    code, out, err = invoke("check", str(path))
    assert code == ExitCode.FINDINGS, out + err
    assert "CZ701" in out
    whole_path = tmp_path / f"whole.log.{kind}"
    whole_path.write_bytes(whole)
    assert invoke("check", str(whole_path))[0] == ExitCode.OK


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_bytes_after_the_compressed_data_lose_no_line_of_it(tmp_path: Path, kind: str) -> None:
    """A compressed log with junk after its data (eight zero bytes: a copy padded, a write cut
    short in the next frame): every line of the data is read."""
    path = tmp_path / f"daemon.log.{kind}"
    path.write_bytes(_compressed(kind, EXAMPLE.read_bytes()) + bytes(8))
    for stdin in (False, True):
        args = ["analyze", "-" if stdin else str(path), "--format", "json"]
        code, out, err = invoke(*args, input=path.read_bytes() if stdin else None)
        assert code == ExitCode.OK, err
        acc = json.loads(out)["accounting"]
        assert acc["lines_total"] == EXAMPLE.read_bytes().count(b"\n")
        # (gzip takes zero bytes after its members as padding, as the gzip tool does; zstd's
        # format has no padding: the junk is reported.)
        damaged = [] if kind == "gz" else ["<stdin>" if stdin else str(path)]
        assert list(acc["truncated_inputs"]) == damaged


def test_a_zstd_log_that_begins_with_a_skippable_frame_is_read(tmp_path: Path) -> None:
    """``pzstd`` and seekable zstd files begin with a skippable frame (and hold more between
    their frames): read as zstd, every line, where it was refused as binary data."""
    import struct

    zstandard = pytest.importorskip("zstandard")
    data = EXAMPLE.read_bytes()
    skip = struct.pack("<II", 0x184D2A50, 4) + bytes(4)
    half = len(data) // 2
    frames = [zstandard.ZstdCompressor().compress(part) for part in (data[:half], data[half:])]
    path = tmp_path / "daemon.log.zst"
    path.write_bytes(skip + frames[0] + skip + frames[1])
    code, out, err = invoke("analyze", str(path), "--format", "json")
    assert code == ExitCode.OK, err
    acc = json.loads(out)["accounting"]
    assert acc["lines_total"] == data.count(b"\n") and not acc["truncated_inputs"]


def test_the_truncation_policy_of_check_is_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = gzip.compress(EXAMPLE.read_bytes())
    path = tmp_path / "daemon.log.gz"
    path.write_bytes(whole[: len(whole) * 9 // 10])
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cuzk-diag.rules.log-coverage]\nseverity = "warning"\n'
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke("check", str(path))
    assert code == ExitCode.OK, out + err


def test_a_compressed_log_cut_before_its_first_line_is_unusable(tmp_path: Path) -> None:
    whole = gzip.compress(EXAMPLE.read_bytes())
    path = tmp_path / "daemon.log.gz"
    path.write_bytes(whole[:30])
    for command in ("check", "analyze"):
        code, _, err = invoke(command, str(path))
        assert code == ExitCode.USAGE, err
        assert_error_form(err)
        assert "ends early" in err


# -- integers no column can hold --------------------------------------------------------------

HUGE = "9" * 25


@pytest.fixture(scope="module")
def huge_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The main-era log with a 25-digit value in a timing line, a TIMELINE offset and a tracing
    field (beyond int64, which every integer column is)."""
    text = (ROOT / "fixtures" / "sim" / "era-main.log").read_text()
    for pattern in ("split_vectors_ms=3 ", "TIMELINE,42604,", " synth_ms=4"):
        assert pattern in text
    text = text.replace("split_vectors_ms=3 ", f"split_vectors_ms={HUGE} ", 1)
    text = text.replace("TIMELINE,42604,", f"TIMELINE,{HUGE},", 1)
    text = text.replace(" synth_ms=4", f" synth_ms={HUGE}4", 1)
    path = tmp_path_factory.mktemp("huge") / "huge.log"
    path.write_text(text)
    return path


@pytest.mark.parametrize("fmt", ["console", "json", "markdown", "html", "junit", "sarif"])
def test_an_integer_beyond_int64_is_read_not_a_crash(huge_log: Path, fmt: str) -> None:
    code, out, err = invoke("analyze", str(huge_log), "--format", fmt)
    assert code == 0, err
    assert "internal error" not in err and out


@pytest.mark.parametrize("suffix", ["parquet", "csv", "jsonl"])
def test_an_integer_beyond_int64_is_kept_in_the_exports(
    huge_log: Path, tmp_path: Path, suffix: str
) -> None:
    """The partition export puts it in ``extra`` (``invalid_<column>``); the line table keeps
    it in the line's ``fields`` text, the offset column holding null."""
    import pyarrow.parquet as pq

    out = tmp_path / f"p.{suffix}"
    code, _, err = invoke("export", str(huge_log), "-o", str(out))
    assert code == 0, err
    lines = tmp_path / f"l.{suffix}"
    code, _, err = invoke("export", "--lines", str(huge_log), "-o", str(lines))
    assert code == 0, err
    if suffix == "parquet":
        extra = [e for e in pq.read_table(out).column("extra").to_pylist() if e]
        assert any(f'"invalid_split_vectors_ms": {HUGE}' in e for e in extra), extra
        table = pq.read_table(lines)
        texts = [f or "" for f in table.column("fields").to_pylist()]
        assert sum(HUGE in f for f in texts) == 3
        row = next(i for i, f in enumerate(texts) if f'"offset_ms": {HUGE}' in f)
        assert table.column("offset_ms")[row].as_py() is None
    else:
        assert HUGE in out.read_text() and HUGE in lines.read_text()


def test_an_integer_beyond_int64_in_live_mode_and_check(huge_log: Path) -> None:
    code, out, err = invoke("analyze", "-", "--format", "json", input=huge_log.read_bytes())
    assert code == 0 and json.loads(out)["schema_version"] == 1, err
    code, out, err = invoke("check", str(huge_log))
    assert code in (0, 1) and "internal error" not in err, err


def _invalid_in(table: Any) -> tuple[int, list[int]]:
    """The values of a partition table that are in ``extra`` as ``invalid_<column>``, and the
    first line of each record that holds one (read here as a user would, row by row)."""
    count, firsts = 0, []
    for extra, first in zip(
        table.column("extra").to_pylist(), table.column("first_line").to_pylist(), strict=True
    ):
        keys = [k for k in json.loads(extra or "{}") if k.startswith("invalid_")]
        count += len(keys)
        firsts += [first] if keys else []
    return count, firsts


def test_a_value_no_column_holds_is_counted_where_every_command_reads_it(
    huge_log: Path, tmp_path: Path
) -> None:
    """Each value moved to ``extra`` (the 25-digit ``split_vectors_ms``, and the
    ``synth_end_ms`` the 25-digit TIMELINE offset gives) is counted in the accounting, with
    the first line of its record: by ``analyze`` of the file and of stdin (live mode), in the
    export's summary and metadata, and by ``analyze`` of that export; the console says so, and
    ``check`` gates on it. A log without one counts none."""
    import pyarrow.parquet as pq

    export = tmp_path / "p.parquet"
    code, _, err = invoke("export", str(huge_log), "-o", str(export))
    assert code == 0, err
    expected = _invalid_in(pq.read_table(export))
    assert expected == (2, [expected[1][0]])  # (both in one record)
    assert "2 values their column cannot hold (in extra as invalid_<column>)" in err
    meta = pq.read_metadata(export).metadata[b"cuzk_diag.accounting"]
    assert (json.loads(meta)["invalid_values"], json.loads(meta)["invalid_values_examples"]) == (
        expected[0],
        expected[1],
    )
    for args, data in (
        ((str(huge_log),), None),
        (("-",), huge_log.read_bytes()),
        ((str(export),), None),
    ):
        code, out, err = invoke("analyze", *args, "--format", "json", input=data)
        assert code == 0, err
        acc = json.loads(out)["accounting"]
        assert (acc["invalid_values"], acc["invalid_values_examples"]) == expected, args
    code, out, _ = invoke("analyze", str(huge_log))
    assert "values their column cannot hold 2" in " ".join(out.split())
    # A gate on them fails where the log holds one, and passes where it holds none.
    gate = ("--gate", "accounting.invalid_values == 0")
    code, out, _ = invoke("check", str(huge_log), *gate)
    assert code == 1 and "accounting.invalid_values = 2" in out, out
    code, out, _ = invoke("check", str(ROOT / "fixtures" / "sim" / "era-main.log"), *gate)
    assert code == 0 and "accounting.invalid_values = 0" in out, out
    code, out, _ = invoke(
        "analyze", str(ROOT / "fixtures" / "sim" / "era-main.log"), "--format", "json"
    )
    acc = json.loads(out)["accounting"]
    assert (acc["invalid_values"], acc["invalid_values_examples"]) == (0, [])


def test_only_the_values_moved_out_of_a_column_are_counted() -> None:
    """``note_invalid`` counts an ``invalid_<column>`` key of a partition column, each record's
    first line once; not another key that begins so, nor a record without ``extra``."""
    from cuzk_diag.frame import note_invalid, records_to_table
    from cuzk_diag.records import Accounting

    big = 10**25
    rows = [
        {"record": 0, "first_line": 7, "gpu_ms": big, "queue_ms": big},  # two values
        {"record": 1, "first_line": 9, "extra": json.dumps({"invalid_nothing": 1})},
        {"record": 2, "first_line": 11},
        {"record": 3, "first_line": 12, "synth_ms": "text"},  # a text in a number column
    ]
    table = records_to_table(rows)
    assert _invalid_in(table) == (4, [7, 9, 12])  # (invalid_nothing too, read as a user would)
    acc = Accounting()
    note_invalid(table, acc)
    assert (acc.invalid_values, acc.invalid_values_examples) == (3, [7, 12])
    clean = Accounting()
    note_invalid(records_to_table(rows[2:3]), clean)
    assert (clean.invalid_values, clean.invalid_values_examples) == (0, [])


# -- numbers Python cannot read as int or float -------------------------------------------------

DIGITS = "9" * 5000  # beyond the digits Python converts to an int (sys.get_int_max_str_digits)
PROVE_TIME = "9" * 400  # a duration beyond a float


@pytest.fixture(scope="module")
def overflow_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """The main-era log with numbers no int or float holds: a tracing value of 5,000 digits and
    one in superscript digits (which ``str.isdigit`` takes but ``int`` does not), a GPU prove
    time of 400 digits, a TIMELINE offset of 5,000 digits and one in superscript digits, a
    CUZK_TIMING GPU ordinal and a cuzk-bench proof number of 5,000 digits; with the line
    numbers of the lines counted as malformed (the bench lines are no bench lines: other). Also
    a bench wall time that is no number and a call on a negative worker id (no GPU of the
    list ``gpus=[0, 1]``)."""
    lines = (ROOT / "fixtures" / "sim" / "era-main.log").read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if " prove_start_ms=" in ln)
    line = lines[at]
    head, _, _ = line.partition(" prove_start_ms=")
    ts = line.split(" ", 1)[0]
    added = [
        f"{head} prove_start_ms={DIGITS}",
        f"{head} prove_start_ms=\u00b2",
        f"{ts}  INFO gpu_prove{{circuit_id=porep-32g partition=Some(0)}}: "
        f"bellperson::groth16::prover::supraseal: GPU prove time: {PROVE_TIME}s",
        f"TIMELINE,{DIGITS},SYNTH_START,overflow-job,partition=0",
        "TIMELINE,\u00b2,SYNTH_START,overflow-job,partition=0",
        f"CUZK_TIMING: set pool release threshold to MAX on gpu {DIGITS}",
        f"[{DIGITS}/10] OK \u2014 5.0s (prove=1 ms, queue=2 ms)",
        "  [2/2] COMPLETED \u2014 56.1.5s (prove=11235 ms, queue=11602 ms)",  # not a number
        "TIMELINE,42605,GPU_START,overflow-job,worker=-9223372036854775809,partition=0",
        # an offset int64 holds, whose wall clock is beyond the year 9999 (or int64 itself)
        "TIMELINE,9999999999999999,GPU_START,overflow-job2,worker=0,partition=0",
        "TIMELINE,9223372036854775000,GPU_START,overflow-job3,worker=1,partition=0",
    ]
    lines[at + 1 : at + 1] = added
    path = tmp_path_factory.mktemp("overflow") / "overflow.log"
    path.write_text("\n".join(lines) + "\n")
    return path, [at + 1 + i for i in (3, 4, 5, 6)]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_numbers_python_cannot_read_are_text_or_counted_not_a_crash(
    overflow_log: tuple[Path, list[int]], jobs: str
) -> None:
    path, malformed = overflow_log
    for fmt in ("console", "html", "json"):  # (json last: its accounting is read below)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (a warning would end the command: internal error)
            code, out, err = invoke("analyze", str(path), "--format", fmt, "--jobs", jobs)
        assert code == 0 and out, err
        assert "internal error" not in err, err
    acc = json.loads(out)["accounting"]
    assert acc["malformed"] == 4 and acc["malformed_examples"] == malformed, acc
    assert acc["lines_total"] == sum(acc["by_family"].values())


def test_numbers_python_cannot_read_in_live_mode_and_the_line_table(
    overflow_log: tuple[Path, list[int]], tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    path, malformed = overflow_log
    prove_line = malformed[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = invoke("analyze", "-", "--format", "json", input=path.read_bytes())
        assert code == 0 and json.loads(out)["accounting"]["malformed"] == 4, err
        live, live_err = invoke("analyze", "-", input=path.read_bytes())[1:]  # JSON Lines
        assert '"type":"summary"' in live and "internal error" not in live_err, live_err
        for suffix in ("parquet", "csv", "jsonl"):
            code, _, err = invoke("export", str(path), "-o", str(tmp_path / f"p.{suffix}"))
            assert code == 0, err
    lines = tmp_path / "lines.parquet"
    code, _, err = invoke("export", "--lines", str(path), "-o", str(lines))
    assert code == 0, err
    rows = pq.read_table(lines).to_pylist()
    texts = [r["fields"] or "" for r in rows]
    assert sum(f'"prove_start_ms": "{DIGITS}"' in f for f in texts) == 1
    assert sum('"prove_start_ms": "\u00b2"' in f for f in texts) == 1
    (prove,) = [r for r in rows if r["line"] == prove_line]
    assert prove["event"] == "gpu_prove_time" and prove["malformed"] is True
    assert json.loads(prove["fields"])["gpu_prove_time_ms"] is None
    assert sorted(r["line"] for r in rows if r["malformed"]) == malformed


def test_gpu_lists_and_widths_of_digits_int_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``gpus=[...]`` list keeps the ordinals ``int`` reads; ``COLUMNS`` that is no width is
    ignored (both ended a command with a ValueError when written in other digits)."""
    from cuzk_diag.ingest.assemble.runinfo import note_run_info
    from cuzk_diag.records import Event, Family, RunInfo
    from cuzk_diag.report.console import FILE_WIDTH, console_width

    info = RunInfo()
    gpus = f"[0, \u00b2, {DIGITS}, \u0663, 1]"
    note_run_info(info, Event(1, 0, Family.TRACING, "gpu_workers_init", {"gpus": gpus}))
    assert info.gpus == [0, 1]
    for cols in ("\u00b2", DIGITS, "0", "-3", "12a"):
        monkeypatch.setenv("COLUMNS", cols)
        assert console_width(False) == FILE_WIDTH
    monkeypatch.setenv("COLUMNS", "123")
    assert console_width(False) == 123


# -- the end of the process -----------------------------------------------------------------

_ENDING = """
import atexit, sys, threading, time
from pathlib import Path
atexit.register(lambda: print("exit functions ran"))  # (after the report: a flush is due)
flag = Path(sys.argv[2])
if sys.argv[1] == "thread":
    def late() -> None:
        time.sleep(4)  # (past the command's end)
        flag.write_text("the thread ended")
    threading.Thread(target=late).start()
from cuzk_diag.cli import entry
sys.argv = ["cuzk-diag", *sys.argv[3:]]
raise SystemExit(entry())
"""


@pytest.mark.parametrize("thread", ["none", "thread"])
def test_the_command_ends_its_process_as_the_interpreter_would(tmp_path: Path, thread: str) -> None:
    """The installed command ends its process without freeing each object (``end_process``):
    its exit code, every byte of its output through a pipe, the exit functions run; a thread
    still running is waited for, as the interpreter waits."""
    flag = tmp_path / "flag"
    args = ["analyze", str(INCIDENT), "--format", "json", "--fail-on", "error"]
    # (Output to a pipe buffered, as a CI's shell has it.)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.run(
        [sys.executable, "-c", _ENDING, thread, str(flag), *args],
        capture_output=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == ExitCode.FINDINGS, proc.stderr
    report, ran = proc.stdout.decode().rstrip().rsplit("\n", 1)
    assert json.loads(report)["findings"] and b"Traceback" not in proc.stderr
    assert ran == "exit functions ran"
    assert flag.exists() == (thread == "thread")
