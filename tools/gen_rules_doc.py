#!/usr/bin/env python3
"""Regenerate docs/rules.md from the rule docstrings.

python tools/gen_rules_doc.py          # rewrite docs/rules.md
python tools/gen_rules_doc.py --check  # exit 1 if docs/rules.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "rules.md"


def generate() -> str:
    sys.path.insert(0, str(ROOT / "src"))  # works from a checkout without installing
    from cuzk_diag.rules import render_rules_markdown

    return render_rules_markdown()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the file is current")
    args = ap.parse_args(argv)
    text = generate()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
    if args.check:
        if current != text:
            print(
                f"{TARGET.relative_to(ROOT)} is out of date; run tools/gen_rules_doc.py",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != text:
        TARGET.write_text(text, encoding="utf-8")
        print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
