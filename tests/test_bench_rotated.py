"""``bench/common.rotated``: the log the ``analyze rotated`` rows read as rotated files; the
rounds ``bench/run.py`` runs against a baseline, and the copies of the two builds it runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from common import BenchError, rotated  # noqa: E402


def test_the_rotated_files_are_the_log_cut_at_line_starts_and_made_once(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.write_bytes((ROOT / "fixtures" / "sim" / "healthy-main.log").read_bytes())
    files = rotated(log, 3)
    assert [p.name for p in files] == [f"daemon.log.rot-{i}-of-3" for i in range(3)]
    parts = [p.read_bytes() for p in files]
    assert b"".join(parts) == log.read_bytes()
    assert all(part.endswith(b"\n") for part in parts)
    sizes = [len(part) for part in parts]
    assert max(sizes) - min(sizes) < 1000  # (about equal: a line is shorter)
    made = [p.stat().st_mtime_ns for p in files]
    assert rotated(log, 3) == files
    assert [p.stat().st_mtime_ns for p in files] == made  # (reused, not written again)
    log.write_bytes(log.read_bytes() + b"one more line\n")
    assert b"".join(p.read_bytes() for p in rotated(log, 3)) == log.read_bytes()


def test_the_rotated_rows_name_their_file_count() -> None:
    """``analyze rotated [N] [-j1]``: 4 files without N, N files with it (2 to 1000); any
    other form is no rotated row (``bench/run.py`` then refuses it as an unknown tool)."""
    from run import rotated_parts

    assert rotated_parts("analyze rotated") == rotated_parts("analyze rotated -j1") == 4
    assert rotated_parts("analyze rotated 50") == rotated_parts("analyze rotated 50 -j1") == 50
    for tool in (
        "analyze",
        "analyze rotated 1",
        "analyze rotated x",
        "analyze rotated -j1 5",
        "analyze rotated 5 6",
        "analyze rotated 1001",
        "export rotated 5",
    ):
        assert rotated_parts(tool) is None, tool


def test_a_run_against_a_baseline_has_an_even_number_of_rounds() -> None:
    """Each build goes first in as many rounds: an odd ``--reps`` gets one more with a
    baseline, none without."""
    from run import rounds

    assert [rounds(n, True) for n in (1, 2, 3, 5, 6)] == [2, 2, 4, 6, 6]
    assert [rounds(n, False) for n in (1, 2, 3, 5)] == [1, 2, 3, 5]


def test_both_builds_run_from_their_bytecode_where_imports_write_none(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The snapshot of this build and the copy of the ``--baseline`` build hold the bytecode of
    every module, written when they are made, whether or not imports write any
    (``PYTHONDONTWRITEBYTECODE``): neither build's commands compile their modules."""
    import importlib.util

    from common import compiled_copy

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    pkg = tmp_path / "src" / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("def f():\n    return 2\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"stale")
    dest = tmp_path / "copy"
    (dest / "old").mkdir(parents=True)  # (emptied first)
    compiled_copy(pkg, dest)
    assert not (dest / "old").exists()
    for module in ("__init__.py", "sub/__init__.py", "sub/mod.py"):
        source = dest / "pkg" / module
        cached = Path(importlib.util.cache_from_source(str(source)))
        assert cached.is_file(), module
    assert not (dest / "pkg" / "__pycache__" / "stale.cpython-311.pyc").exists()
    (pkg / "sub" / "bad.py").write_text("def (:\n")
    with pytest.raises(BenchError):
        compiled_copy(pkg, tmp_path / "copy2")
