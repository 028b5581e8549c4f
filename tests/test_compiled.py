"""The compiled build gives the pure build's results.

A regular install compiles the parse, the assembly, the records' conversion and the trace with
Cython (``setup.py``); the test suite runs the pure modules of an editable install. Here the modules
are compiled as ``setup.py`` compiles them, next to a copy of the package, and that copy must
give the digests every pure run gives (``tests/_digest.py``: records, attribution labels,
accounting, the line table and the JSON report of every fixture and sweep log), and pass the
live-mode and ingest tests (previews copy the assembler; ``--jobs 2`` sends parsed chunks
between processes) and the column-wise parse's (the compiled loops over the bytes of C++,
TIMELINE and tracing lines held to the per-line parsers) and the trace's (its events' text held
to the JSON encoder's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _compiler_at_hand() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None


@pytest.fixture(scope="module")
def compiled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not os.environ.get("CI"):
        # (CI installs both; there a missing one fails the test instead of skipping it.)
        pytest.importorskip("Cython")
        if not _compiler_at_hand():
            pytest.skip("no C compiler")
    tree = tmp_path_factory.mktemp("compiled")
    shutil.copytree(
        ROOT / "src" / "cuzk_diag",
        tree / "cuzk_diag",
        ignore=shutil.ignore_patterns("__pycache__", "*.so"),
    )
    build = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "-q",
            "build_ext",
            "--build-lib",
            str(tree),
            "--build-temp",
            str(tree / "_build"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return tree


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def _pytest(tree: Path, *args: str) -> None:
    """The test suite's ``args`` run against the package in ``tree``; they must pass."""
    tests = _run(tree, "-m", "pytest", "-x", "-p", "no:cacheprovider", *args)  # (-q: addopts)
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-4000:]
    assert " skipped" not in tests.stdout, tests.stdout[-2000:]


def test_setup_compiles_every_module_of_the_stages(compiled_tree: Path) -> None:
    probe = _run(
        compiled_tree,
        "-c",
        "import cuzk_diag.ingest as i, cuzk_diag.ingest.assemble.gpu as g, cuzk_diag.live, "
        "cuzk_diag.trace as t; print(i.build(), g.__file__, t.__file__)",
    )
    assert probe.returncode == 0, probe.stderr
    kind, *paths = probe.stdout.split()[-3:]
    assert kind == "compiled", probe.stdout
    for path in paths:
        assert path.startswith(str(compiled_tree)) and not path.endswith(".py")
    # The pure tree says so of itself.
    from cuzk_diag.ingest import build

    assert build() == "pure Python"


def test_the_compiled_build_gives_every_digest_of_the_pure_build(compiled_tree: Path) -> None:
    check = _run(compiled_tree, "tests/_digest.py", "--check")
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-4000:]


def test_the_compiled_build_passes_the_event_live_ingest_pool_split_parse_and_trace_tests(
    compiled_tree: Path,
) -> None:
    _pytest(
        compiled_tree,
        "tests/test_classify.py",
        "tests/test_event.py",
        "tests/test_live.py",
        "tests/test_ingest.py",
        "tests/test_pool.py",
        "tests/test_split.py",
        "tests/test_columnar.py",
        "tests/test_shapes.py",
        "tests/test_trace.py",
    )


def test_the_compiled_loops_over_line_bytes_are_linear_on_adversarial_lines(
    compiled_tree: Path,
) -> None:
    """The C loops of ``scan`` (which the pure build does not run in its parse) and the parse
    of whole 1 MiB lines through them cost what a plain scan of the line costs, within the
    ratio of the pattern tests."""
    _pytest(
        compiled_tree,
        "tests/test_patterns.py",
        "-k",
        "scan_loops_are_linear or parser_is_linear",
    )


def test_every_step_of_the_instruction_breakdown_names_a_compiled_function(
    compiled_tree: Path,
) -> None:
    """``bench/instructions.py --steps`` reads callgrind's counts by the compiled functions' C
    names (``STEPS``): each of its patterns names a function the build defines, so that a
    renamed function fails here rather than counting as none there."""
    import re

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from instructions import STEPS
    finally:
        sys.path.remove(str(ROOT / "bench"))
    names: set[str] = set()
    for source in (compiled_tree / "_build").rglob("*.c"):
        text = source.read_text(encoding="utf-8", errors="replace")
        names.update(re.findall(r"^static [^;(]*?\b(__pyx_\w+)\(", text, re.MULTILINE))
    assert len(names) > 1000  # (the C sources were found)
    for _, step, patterns in STEPS:
        for pattern in patterns:
            rx = re.compile(pattern + "$")
            assert any(rx.search(name) for name in names), (step, pattern)
