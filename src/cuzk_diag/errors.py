"""Errors the library raises for the CLI to turn into messages (never tracebacks)."""


class CuzkDiagError(Exception):
    """Base class of every error meant for the user."""


class InputError(CuzkDiagError):
    """An input cannot be opened or holds nothing usable."""


class ConfigError(CuzkDiagError):
    """A configuration file or option is wrong."""


class OutputError(CuzkDiagError):
    """An output file cannot be created or written (a missing directory, no permission)."""
