"""Process exit codes, documented in the README and in ``cuzk-diag --help``."""

import enum


class ExitCode(enum.IntEnum):
    """What the process tells its caller."""

    OK = 0  # ran; nothing at or above --fail-on (or every gate passed)
    FINDINGS = 1  # findings at or above --fail-on, or a gate failed
    USAGE = 2  # bad options or unusable input (e.g. no timing lines for a gate)
    INTERNAL = 3  # a bug: please report it with --debug output
    HANGUP = 129  # SIGHUP (128 + 1): live mode printed the report of what was read
    INTERRUPTED = 130  # SIGINT, Ctrl-C (128 + 2); in live mode after the report
    TERMINATED = 143  # SIGTERM (128 + 15): live mode printed the report of what was read

    @classmethod
    def of_signal(cls, signum: int) -> int:
        """The shell's convention for a process ended by a signal: 128 + its number."""
        code = 128 + int(signum)
        try:
            return cls(code)
        except ValueError:
            return code
