"""Process exit codes, documented in the README and in ``cuzk-diag --help``."""

import enum


class ExitCode(enum.IntEnum):
    """What the process tells its caller."""

    OK = 0  # ran; nothing at or above --fail-on (or every gate passed)
    FINDINGS = 1  # findings at or above --fail-on, or a gate failed
    USAGE = 2  # bad options or unusable input (e.g. no timing lines for a gate)
    INTERNAL = 3  # a bug: please report it with --debug output
    INTERRUPTED = 130  # Ctrl-C outside live mode
