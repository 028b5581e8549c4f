"""Options shared by several commands: one definition, the same name and help everywhere."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

color_option = click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the console output (auto: only on a terminal and without NO_COLOR).",
)

config_option = click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="TOML config (a pyproject.toml or a plain file); default: the nearest pyproject.toml "
    "with a [tool.cuzk-diag] table.",
)

alpha_option = click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Significance level of the regression tests (default: gates.alpha of the config, "
    "else 0.05).",
)

output_option = click.option(
    "-o", "--output", metavar="FILE", help="Write the report to FILE instead of stdout."
)

allow_different_config_option = click.option(
    "--allow-different-config",
    is_flag=True,
    help="Compare runs even when era, GPUs, gw, proof kind or cuzk-bench -c/-j differ.",
)


def stdout() -> TextIO:
    """The report stream (what click's test runner captures, too)."""
    return sys.stdout


@contextmanager
def report_output() -> Iterator[TextIO]:
    """stdout for a report. A reader that went away (``| head``, ``| true``) ends the output
    quietly: the command carries on to its verdict, which stays the exit code."""
    out = stdout()
    try:
        yield out
        out.flush()
    except BrokenPipeError:
        silence_stdout()
    except SystemExit as exc:
        # rich's Console handles a broken pipe itself: stdout to /dev/null, then exit 1.
        if exc.code != 1 or not stdout_silenced():
            raise


def stdout_silenced() -> bool:
    """Did a broken-pipe handler already point stdout at /dev/null?"""
    if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):  # click < 8.5 and >= 8.5
        return True
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):
        return False


def silence_stdout() -> None:
    """After a broken pipe, point stdout at devnull so that later writes and the interpreter's
    final flush stay quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def to_file(path: str | None) -> bool:
    """Whether ``-o PATH`` names a file (not stdout)."""
    return bool(path) and path != "-"


@contextmanager
def output_stream(path: str | None) -> Iterator[TextIO]:
    """The stream a report goes to: stdout without ``-o`` (or with ``-o -``), else the file,
    written as UTF-8; a file that cannot be written is a usage error (exit 2)."""
    from cuzk_diag.cli import UsageError

    if path is None or not to_file(path):
        with report_output() as out:
            yield out
        return
    try:
        fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        from cuzk_diag.writers import cannot_write

        raise UsageError(str(cannot_write(path, exc))) from None
    with fh:
        yield fh


# -- reading logs: processes and progress ---------------------------------------------------------


def _jobs(ctx: click.Context, param: click.Parameter, value: str) -> int | None:
    """``--jobs``: a number of processes (1 or more), or None for ``auto``."""
    text = value.strip().lower()
    if text == "auto":
        return None
    if text.isascii() and text.isdigit() and int(text) >= 1:
        return int(text)
    raise click.BadParameter(f"{value!r} is neither a number of processes (1 or more) nor 'auto'")


jobs_option = click.option(
    "-j",
    "--jobs",
    metavar="N|auto",
    default="auto",
    callback=_jobs,
    show_default=True,
    help="Processes that read the logs. 2: one log file is assembled in two halves, one in a "
    "second process, and several regular files are parsed in a second process ahead of the "
    "assembly (export --lines: N processes parse chunks in turn, any input; compare and check "
    "--baseline: the two runs side by side; trace: the process that writes the trace "
    "assembles a fifth of the log; analyze's live mode: the rules on the window run in a "
    "second process); the results are the same. auto: 2 for regular "
    "files of 32 MiB or more on a machine with two usable CPUs, and in live mode with two "
    "usable CPUs, else 1; export --lines to "
    "Parquet leaves one CPU to its writer (see docs/performance.md).",
)

quiet_progress_option = click.option(
    "-q", "--quiet", is_flag=True, help="No progress bar on stderr."
)

#: Logs at least this large get a progress bar (on a terminal).
PROGRESS_MIN_BYTES = 32 << 20


def _plain_sizes(logs: Sequence[str]) -> int | None:
    """Total bytes of the logs when each one's size is known ahead (``sources.input_size``)."""
    from cuzk_diag.sources import input_size

    sizes = [input_size(name) for name in logs]
    return None if any(n is None for n in sizes) else sum(n for n in sizes if n is not None)


def progress_stream() -> TextIO | None:
    """stderr when it is a terminal (where a progress bar belongs), else None."""
    return sys.stderr if sys.stderr.isatty() else None


@contextmanager
def input_progress(logs: Sequence[str], quiet: bool = False) -> Iterator[Any]:
    """The parser's progress callback: a rich bar on stderr when it is a terminal and the
    input is large or of unknown size (stdin, compressed logs: bytes read so far), else None."""
    total = _plain_sizes(logs)
    stream = None if quiet else progress_stream()
    if stream is None or (total is not None and total < PROGRESS_MIN_BYTES):
        yield None
        return
    from cuzk_diag.report import console

    with console.progress_bar(stream, total) as advance:
        yield advance
