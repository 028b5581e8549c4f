"""Fixture logs with numbers and tokens replaced by what no line of the daemon holds.

Numbers of thousands of digits, digits of other scripts, ``1e400``, ``nan``, stray quotes,
braces and commas: each mutated log goes through the batch analysis (every report format), the
line table and the live analyzer with warnings as errors. None may raise, and every line is
counted. (Seeded: the same logs on every run.)
"""

from __future__ import annotations

import io
import random
import re
import warnings
from pathlib import Path

import pytest

from cuzk_diag.analysis import analyze
from cuzk_diag.config import Config
from cuzk_diag.linetable import iter_line_tables
from cuzk_diag.live import LiveAnalyzer
from cuzk_diag.records import Accounting
from cuzk_diag.report import get_reporter
from cuzk_diag.sources import SourceStats

SIM = Path(__file__).resolve().parent.parent / "fixtures" / "sim"

#: What a token of a line is replaced by.
REPLACEMENTS = (
    "9" * 25,  # beyond int64
    "9" * 5000,  # beyond what Python reads as an int
    "-9223372036854775809",
    "0" * 50,
    "\u00b2",  # a digit to str.isdigit, not to int
    "\u0663",  # an Arabic-Indic three
    "1e400",
    "nan",
    "inf",
    "1.5",
    "",
    "Some(9)",
    "None",
    '"',
    "{",
    "}",
    ",",
    "=",
    "Z ",
    "TIMELINE,",
    "CUZK_TIMING: ",
    "\u2014",
)
_TOKEN_RE = re.compile(r"\d+|[A-Za-z_]+|[{}\[\](),=:\"]")
TRIALS = 8


def mutated(lines: list[str], rnd: random.Random) -> str:
    """``lines`` with 1 to 12 tokens replaced, numbers three times in four (where a line's
    values are read, and where the crashes this test was written for were)."""
    out = list(lines)
    for _ in range(rnd.randint(1, 12)):
        i = rnd.randrange(len(out))
        tokens = list(_TOKEN_RE.finditer(out[i]))
        numbers = [m for m in tokens if m.group()[0].isdigit()]
        if numbers and rnd.random() < 0.75:
            tokens = numbers
        if tokens:
            m = rnd.choice(tokens)
            out[i] = out[i][: m.start()] + rnd.choice(REPLACEMENTS) + out[i][m.end() :]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    "name", ["era-main", "concurrent-curio", "gw2", "era-phase12", "incident", "cpp-only"]
)
def test_mutated_logs_are_read_without_an_exception_or_a_warning(name: str, tmp_path: Path) -> None:
    lines = (SIM / f"{name}.log").read_text().splitlines()
    rnd = random.Random(name)
    for trial in range(TRIALS):
        text = mutated(lines, rnd)
        path = tmp_path / f"{name}-{trial}.log"
        path.write_text(text)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = analyze([str(path)], Config(), jobs=1)
            for fmt in ("json", "console", "markdown", "html", "sarif", "junit"):
                get_reporter(fmt)(result, io.StringIO(), color="never")
            acc = Accounting()
            rows = sum(t.num_rows for t in iter_line_tables([str(path)], acc))
            engine = LiveAnalyzer(Config())
            engine.begin_source(0, SourceStats(str(path)))
            half = text.rfind("\n", 0, len(text) // 2) + 1
            engine.feed(text[:half])
            engine.tick()
            engine.speculate()
            engine.feed(text[half:])
            engine.end_source()
            live = engine.finish()
        n = text.count("\n")
        counted = result.accounting
        assert counted.lines_total == n == sum(counted.by_family.values()), (name, trial)
        assert acc.lines_total == n and rows >= n - acc.torn_repaired, (name, trial)
        assert live.accounting.lines_total == n, (name, trial)
        assert len(live.partitions) == len(result.partitions), (name, trial)
