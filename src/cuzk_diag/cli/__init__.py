"""Command-line interface: the only module tree that knows about click."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from cuzk_diag import __version__
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode


class UsageError(click.ClickException):
    """A user error; exit code 2 so it never collides with 'findings found' (1)."""

    exit_code = ExitCode.USAGE


EXIT_CODES_HELP = """\b
Exit codes:
  0  ok
  1  findings at or above --fail-on, or a failed gate
  2  usage or input error
  3  internal error (rerun with --debug for a traceback)
"""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, "-V", "--version", prog_name="cuzk-diag")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Find where the time goes in a cuzk proving daemon log.

    Reads CUZK_TIMING, CUZK_NTT_H, TIMELINE and tracing lines of every code version,
    assembles one record per GPU call and diagnoses the run.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# Commands register themselves on `cli` when their module is imported.
# -- command modules --
from cuzk_diag.cli import analyze as _analyze  # noqa: E402,F401
from cuzk_diag.cli import check as _check  # noqa: E402,F401
from cuzk_diag.cli import compare as _compare  # noqa: E402,F401
from cuzk_diag.cli import export as _export  # noqa: E402,F401
from cuzk_diag.cli import fleet as _fleet  # noqa: E402,F401
from cuzk_diag.cli import rules_cmd as _rules_cmd  # noqa: E402,F401

# -- end command modules --


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code instead of exiting deep inside."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        rv = cli.main(args=args, prog_name="cuzk-diag", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return ExitCode.INTERRUPTED
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return int(exc.exit_code)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:
        _silence_stdout()
        return ExitCode.OK
    except SystemExit as exc:
        # click and rich turn a closed downstream pipe (`| head`) into exit 1 after pointing
        # stdout at /dev/null; a reader that stopped reading is not an error here.
        if exc.code == 1 and _stdout_silenced():
            return ExitCode.OK
        raise
    except CuzkDiagError as exc:
        click.echo(f"cuzk-diag: error: {exc}", err=True)
        return ExitCode.USAGE
    except Exception as exc:  # the last line of defence: a message, not a traceback
        if debug:
            raise
        click.echo(
            f"cuzk-diag: internal error: {type(exc).__name__}: {exc}\n"
            "Rerun with --debug for a traceback.",
            err=True,
        )
        return ExitCode.INTERNAL
    return int(rv) if isinstance(rv, int) else ExitCode.OK


def _stdout_silenced() -> bool:
    """Did a broken-pipe handler already point stdout at /dev/null?"""
    import os

    if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):  # click < 8.5 and >= 8.5
        return True
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):
        return False


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at devnull so the interpreter's flush stays quiet."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
