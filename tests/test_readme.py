"""The README's examples are real: its commands are rerun and must print what it shows.

Every fenced ``console`` block whose first line is ``$ cuzk-diag ...`` is one command followed by
its output (stdout and stderr, as a terminal shows them, with ``NO_COLOR=1`` and
``COLUMNS=100``). Every ``pycon`` block is run as a doctest. Both run in a scratch directory
that links ``fixtures/``, in the order of the README, so a later block can read a file an
earlier one wrote.

After a deliberate change of the output, rewrite the console blocks with::

    python tests/test_readme.py --update

(``pycon`` blocks are edited by hand; a failing doctest prints what it got.)
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"

#: The test command of the README; `.ci/run` runs exactly this.
TEST_COMMAND = (
    "python3 -m pip install -q -e '.[test]' && sh tools/install-test-browser.sh"
    " && python3 -m pytest"
)

ENV = {"NO_COLOR": "1", "COLUMNS": "100", "PYTHONUNBUFFERED": "1"}
#: A fenced block; a longer fence (````) may enclose output that has ``` lines of its own.
FENCE = re.compile(
    r"^(?P<fence>`{3,})(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Block:
    """One fenced block of the README: its language, text and place."""

    lang: str
    body: str
    start: int  # offset of the body in the README text
    line: int  # line number of the opening fence

    @property
    def command(self) -> str:
        return self.body.splitlines()[0][2:]

    @property
    def shown(self) -> str:
        return normalise("\n".join(self.body.splitlines()[1:]))


def blocks(text: str) -> list[Block]:
    out = []
    for m in FENCE.finditer(text):
        lang, body = m.group("lang"), m.group("body")
        line = text.count("\n", 0, m.start()) + 1
        out.append(Block(lang, body, m.start("body"), line))
    return out


def command_blocks(text: str) -> list[Block]:
    return [b for b in blocks(text) if b.lang == "console" and b.body.startswith("$ cuzk-diag ")]


def normalise(output: str) -> str:
    """Trailing whitespace and trailing blank lines do not count."""
    lines = [ANSI.sub("", line).rstrip() for line in output.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


@contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cuzk-diag-readme-") as tmp:
        work = Path(tmp)
        (work / "fixtures").symlink_to(ROOT / "fixtures", target_is_directory=True)
        yield work


def run(command: str, cwd: Path) -> str:
    """Run a README command as a user would (the installed CLI), stdout and stderr together."""
    argv = shlex.split(command)
    assert argv[0] == "cuzk-diag"
    proc = subprocess.run(
        [sys.executable, "-m", "cuzk_diag", *argv[1:]],
        cwd=cwd,
        env={**os.environ, **ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    return normalise(proc.stdout)


def run_all(text: str, cwd: Path) -> dict[int, str]:
    """Output of every command block, by the block's line number, in README order."""
    return {b.line: run(b.command, cwd) for b in command_blocks(text)}


# -- tests ------------------------------------------------------------------------------------

TEXT = README.read_text(encoding="utf-8")
COMMANDS = command_blocks(TEXT)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with scratch() as work:
        yield work


@pytest.fixture(scope="module")
def outputs(workdir: Path) -> dict[int, str]:
    return run_all(TEXT, workdir)


def test_readme_opens_with_the_setup_commands() -> None:
    first = blocks(TEXT)[0].body.splitlines()
    assert len(first) == 2
    assert first[0].startswith("python3 -m pip install . && cuzk-diag analyze fixtures/")
    assert first[1] == TEST_COMMAND
    ci = [ln for ln in CI_RUN.read_text(encoding="utf-8").splitlines() if "pytest" in ln]
    assert ci == [TEST_COMMAND], ".ci/run must run the README's test command"


def test_readme_has_command_examples() -> None:
    used = {shlex.split(b.command)[1] for b in COMMANDS}
    assert {"analyze", "rules", "explain", "export", "check", "compare"} <= used


@pytest.mark.parametrize("block", COMMANDS, ids=lambda b: f"L{b.line}:{b.command[:60]}")
def test_command_output_matches_readme(block: Block, outputs: dict[int, str]) -> None:
    got = outputs[block.line]
    assert got == block.shown, (
        f"README.md line {block.line}: `{block.command}` prints something else; "
        "run python tests/test_readme.py --update and review the diff"
    )


PYCON = [b for b in blocks(TEXT) if b.lang == "pycon"]


@pytest.mark.usefixtures("outputs")  # the examples read files the commands wrote (the export)
@pytest.mark.parametrize("block", PYCON, ids=lambda b: f"L{b.line}")
def test_python_examples(block: Block, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    test = doctest.DocTestParser().get_doctest(block.body, {}, f"README.md:{block.line}", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test, out=sys.stdout.write)
    assert runner.failures == 0, f"README.md line {block.line}: doctest failed (output above)"


# -- regeneration -----------------------------------------------------------------------------


def update(text: str) -> str:
    """The README with every command block's output replaced by the real output."""
    with scratch() as work:
        got = run_all(text, work)
    out, pos = [], 0
    for b in command_blocks(text):
        end = b.start + len(b.body)
        out.append(text[pos : b.start])
        body = f"$ {b.command}\n"
        if got[b.line]:
            body += got[b.line] + "\n"
        out.append(body)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print("usage: python tests/test_readme.py --update", file=sys.stderr)
        return 2
    new = update(TEXT)
    if new == TEXT:
        print("README.md is up to date")
    else:
        README.write_text(new, encoding="utf-8")
        print("README.md updated; review the diff")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
