"""Diagnosis rules: a registry of small documented units, one module per area.

Importing this package registers every rule. ``run_rules`` runs the selected ones on a
``RuleContext``; ``render_rules_markdown`` renders ``docs/rules.md``.
"""

# Area modules register their rules on import; the order does not matter (rules sort by code).
from cuzk_diag.rules import (  # noqa: E402,F401  (imported for registration)
    coverage,
    cpu,
    failures,
    fleet,
    locking,
    memory,
    shape,
    utilisation,
)
from cuzk_diag.rules.base import (
    COMMON_EVIDENCE,
    DOC_SECTIONS,
    Option,
    Rule,
    RuleContext,
    all_rules,
    get_rule,
    matches_any_rule,
    register,
    render_rule_markdown,
    render_rules_markdown,
    run_rules,
    select_rules,
)

__all__ = [
    "COMMON_EVIDENCE",
    "DOC_SECTIONS",
    "Option",
    "Rule",
    "RuleContext",
    "all_rules",
    "get_rule",
    "matches_any_rule",
    "register",
    "render_rule_markdown",
    "render_rules_markdown",
    "run_rules",
    "select_rules",
]
