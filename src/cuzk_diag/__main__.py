"""Allow ``python -m cuzk_diag``."""

from cuzk_diag.cli import entry

raise SystemExit(entry())
