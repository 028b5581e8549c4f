"""Allow ``python -m cuzk_diag``."""

from cuzk_diag.cli import command

raise SystemExit(command())
