"""docs/export.md is generated from the declared schemas and must stay in sync."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_export_doc_in_sync():
    mod = runpy.run_path(str(ROOT / "tools" / "gen_export_doc.py"))
    assert (ROOT / "docs" / "export.md").read_text() == mod["render"](), (
        "docs/export.md is stale: run python tools/gen_export_doc.py"
    )
