"""Writes a signal cannot cut short (``pipes``): a process stopped and continued while it writes
more than its pipe holds (Ctrl-Z and ``fg``) loses no byte of its output."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _signals import ShortWrites, child_env, stopped_and_continued
from cuzk_diag import pipes
from cuzk_diag.model.daemon import SimConfig, simulate


@pytest.mark.parametrize("most", [1, 5, 1000])
def test_write_all_goes_on_until_every_byte_is_written(most: int) -> None:
    data = bytes(range(256)) * 9
    stingy = ShortWrites(most, idle_every=3)  # (and every third call takes none)
    assert pipes.write_all(stingy.write, data) == len(data)
    assert stingy.getvalue() == data
    assert pipes.write_all(stingy.write, b"") == 0


def test_whole_stdio_keeps_each_stream_s_text_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The streams stay on their descriptors, with their encoding, errors and line buffering; a
    stream without a descriptor (a test's capture) stays as it is."""
    r, w = os.pipe()
    try:
        out = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(w, "wb", closefd=False)),
            encoding="latin-1",
            errors="replace",
            line_buffering=True,
        )
        captured = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", captured)
        pipes.whole_stdio()
        assert sys.stderr is captured
        new = sys.stdout
        assert new is not out and new.fileno() == w
        assert (new.encoding, new.errors, new.line_buffering) == ("latin-1", "replace", True)
        assert isinstance(new.buffer.raw, pipes.WholeWrites)  # type: ignore[attr-defined]
        new.write("é€\n")  # (line-buffered: written at the newline)
        assert os.read(r, 100) == "é?\n".encode("latin-1")
    finally:
        os.close(r)
        os.close(w)


def _stopped_and_continued(cmd: list[str]) -> bytes:
    """The stdout of ``cmd`` (this package importable), whose process group is stopped and
    continued all along (``_signals``)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, start_new_session=True, env=child_env())
    with stopped_and_continued(proc, group=True):
        out, _ = proc.communicate()
    assert proc.returncode == 0
    return out


def test_text_printed_while_stopped_and_continued_arrives_whole() -> None:
    """A process printing 24 MB after ``whole_stdio``, stopped and continued all along: every
    byte arrives. (Python's own stdout lost bytes at nearly every stop.)"""
    script = (
        "import sys\n"
        "from cuzk_diag import pipes\n"
        "pipes.whole_stdio()\n"
        "for i in range(24):\n"
        "    sys.stdout.write(str(i % 10) * 1_000_000)\n"
    )
    out = _stopped_and_continued([sys.executable, "-c", script])
    assert out == b"".join(str(i % 10).encode() * 1_000_000 for i in range(24))


def test_a_line_export_to_stdout_while_stopped_and_continued_is_the_same(tmp_path: Path) -> None:
    """``export --lines --format jsonl -o -``, the command stopped and continued all along: the
    same bytes as the export to a file."""
    log = tmp_path / "sim.log"
    cfg = SimConfig(
        era="main", n_gpus=2, gw=2, proofs=8, concurrency=4, seed=5, target_bytes=3_000_000
    )
    log.write_bytes(simulate(cfg).data)
    base = [sys.executable, "-m", "cuzk_diag", "export", "--lines", "--format", "jsonl", "-q"]
    target = tmp_path / "lines.jsonl"
    subprocess.run([*base, str(log), "-o", str(target)], check=True, env=child_env())
    out = _stopped_and_continued([*base, str(log), "-o", "-"])
    assert len(out) > 5_000_000 and out == target.read_bytes()


EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example.log"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    [
        ["analyze", str(EXAMPLE)],
        ["analyze", str(EXAMPLE), "--format", "json", "-o", "/dev/full"],
        ["export", str(EXAMPLE), "--format", "csv", "-o", "-"],
        ["rules"],
    ],
)
def test_a_full_disk_is_an_error_message_not_a_traceback(args: list[str]) -> None:
    """Output that cannot be written (a full disk: ``/dev/full``): one error line, exit 2, and
    no traceback, also from the interpreter's last flush of stdout."""
    with open("/dev/full", "wb") as full:
        res = subprocess.run(
            [sys.executable, "-m", "cuzk_diag", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=120,
        )
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert "No space left on device" in err
    assert "Traceback" not in err and "internal error" not in err and "Exception" not in err


def test_a_closed_stdout_is_an_error_message_and_a_file_output_still_works(
    tmp_path: Path,
) -> None:
    """Started with stdout closed (``>&-``): a report to stdout is an error line (exit 2); a
    report to a file is written as ever."""
    base = [sys.executable, "-m", "cuzk_diag", "analyze", str(EXAMPLE)]

    def run(*more: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*base, *more],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=120,
            preexec_fn=lambda: os.close(1),
        )

    res = run()
    assert res.returncode == 2 and b"stdout is closed" in res.stderr, res.stderr
    assert b"Traceback" not in res.stderr
    target = tmp_path / "report.json"
    res = run("--format", "json", "-o", str(target))
    assert res.returncode == 0, res.stderr
    assert target.read_text().startswith("{")
