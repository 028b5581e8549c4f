"""Allow ``python -m cuzk_diag``."""

from cuzk_diag.cli import main

raise SystemExit(main())
