"""Command-line interface: the only module tree that knows about click."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

import click

import cuzk_diag.cli._startup  # noqa: F401  (first: before numpy is imported)
from cuzk_diag import __version__
from cuzk_diag.cli.options import silence_stdout, stdout_silenced
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.ingest import build
from cuzk_diag.pipes import whole_stdio


class UsageError(click.ClickException):
    """A user error; exit code 2 so it never collides with 'findings found' (1)."""

    exit_code = ExitCode.USAGE


#: click >= 8.2 raises this for a group called without a command (it shows the help).
_NoArgsIsHelp: type[click.UsageError] = getattr(
    click.exceptions, "NoArgsIsHelpError", type("_Never", (click.UsageError,), {})
)


def error_line(message: str) -> str:
    """The one form of every error message on stderr."""
    return f"cuzk-diag: error: {message}"


#: The key of the click context's object that says the process ends with the command.
OWN_PROCESS = "own_process"


def own_process() -> bool:
    """Does the process end with the command being run (``command``)?"""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and isinstance(ctx.obj, dict) and ctx.obj.get(OWN_PROCESS))


class Group(click.Group):
    """The command group; turns every failure into ``cuzk-diag: error: ...`` and an exit code.

    The same handling applies whether the group runs as the installed command (``main``) or
    under click's test runner, so that what tests see is what users see.
    """

    def main(  # type: ignore[override,unused-ignore]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        code = _run(self, argv, prog_name or "cuzk-diag", complete_var, extra)
        if standalone_mode:
            sys.exit(code)
        return code


EXIT_CODES_HELP = """\b
Exit codes (also when stdout is a pipe closed early, as by | head):
  0    ok
  1    findings at or above --fail-on, or a failed gate (a truncated
       .gz/.zst input is an error-level finding)
  2    usage or input error (cuzk-diag: error: ... on stderr)
  3    internal error (rerun with --debug for a traceback)
  129, 130, 143
       SIGHUP, Ctrl-C, SIGTERM (live mode, stdin: after the report)
"""


@click.group(
    cls=Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(
    __version__,
    "-V",
    "--version",
    prog_name="cuzk-diag",
    message=f"%(prog)s, version %(version)s ({build()})",
)
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
from cuzk_diag.cli import trace as _trace  # noqa: E402,F401
from cuzk_diag.cli import whatif as _whatif  # noqa: E402,F401

# -- end command modules --


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code instead of exiting deep inside."""
    return int(cli.main(args=argv, prog_name="cuzk-diag", standalone_mode=False))


def command() -> int:
    """``main`` in a process of its own, which ends with the command (``entry``). A command
    whose work needs no pandas may then go without it (``own_process``); called in a process
    that goes on (a test, a notebook), it may not."""
    return int(cli.main(prog_name="cuzk-diag", standalone_mode=False, obj={OWN_PROCESS: True}))


def entry() -> int:
    """The installed command and ``python -m cuzk_diag``: ``command``, then the end of the
    process (``end_process``). Its stdout and stderr write all they are given, however often
    the process is stopped and continued (``pipes.whole_stdio``)."""
    whole_stdio()
    code = command()
    end_process(code)
    return code  # (when the interpreter must end the process itself)


def end_process(code: int) -> None:
    """End this process with ``code`` as the interpreter ends it, but for the freeing of every
    object it holds one at a time, which the system does at once when the process ends (a
    long log's analysis: 0.1 s after the report of the 250 MB log): the exit functions run,
    stdout and stderr are flushed, then ``os._exit``. Returns, leaving the end to the
    interpreter, while another thread runs (which it would wait for) or when a flush fails
    (a reader gone away: the interpreter's own handling and exit status)."""
    if threading.active_count() > 1 or not hasattr(atexit, "_run_exitfuncs"):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _run(
    group: click.Group,
    args: list[str],
    prog_name: str,
    complete_var: str | None,
    extra: dict[str, Any],
) -> int:
    debug = "--debug" in args
    try:
        rv = click.Group.main(
            group,
            args=args,
            prog_name=prog_name,
            complete_var=complete_var,
            standalone_mode=False,
            **extra,
        )
    except click.exceptions.Abort:
        click.echo("cuzk-diag: interrupted", err=True)
        return ExitCode.INTERRUPTED
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except _NoArgsIsHelp as exc:  # `cuzk-diag` alone: the help, as click prints it
        exc.show()
        return ExitCode.USAGE
    except click.UsageError as exc:
        click.echo(error_line(exc.format_message()), err=True)
        if exc.ctx is not None:
            click.echo(f"Try '{exc.ctx.command_path} --help' for help.", err=True)
        return ExitCode.USAGE
    except click.ClickException as exc:
        click.echo(error_line(exc.format_message()), err=True)
        return ExitCode.USAGE
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:
        # The reader went away while a command without a verdict printed (`rules | head`).
        silence_stdout()
        return ExitCode.OK
    except SystemExit as exc:
        # click and rich turn a closed downstream pipe (`| head`) into exit 1 after pointing
        # stdout at /dev/null; a reader that stopped reading is not an error here.
        if exc.code == 1 and stdout_silenced():
            return ExitCode.OK
        raise
    except CuzkDiagError as exc:
        click.echo(error_line(str(exc)), err=True)
        try:
            sys.stdout.flush()  # (what it holds goes out now, or, if it cannot, nowhere)
        except (OSError, ValueError):
            silence_stdout()
        return ExitCode.USAGE
    except OSError as exc:
        # A write the system refused (stdout or ``-o`` on a full disk, a closed stdout; reads
        # of inputs say which input): a message, and stdout quiet for the final flush.
        if debug:
            raise
        where = f"{exc.filename}: " if exc.filename else "cannot write the output: "
        click.echo(error_line(f"{where}{exc.strerror or exc}"), err=True)
        silence_stdout()
        return ExitCode.USAGE
    except Exception as exc:  # the last line of defence: a message, not a traceback
        if debug:
            raise
        click.echo(
            error_line(f"internal error: {type(exc).__name__}: {exc}")
            + "\nRerun with --debug for a traceback.",
            err=True,
        )
        return ExitCode.INTERNAL
    return int(rv) if isinstance(rv, int) else ExitCode.OK
