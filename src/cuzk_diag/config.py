"""Thresholds, rule selection and gates from ``[tool.cuzk-diag]`` or a ``--config`` TOML file.

Layout (every key optional)::

    [tool.cuzk-diag]
    select = ["CZ1", "lock-wait"]     # codes, code prefixes or slugs; default: every rule
    ignore = ["CZ7"]
    fail-on = "warning"               # info | warning | error: exit 1 at or above this
    [tool.cuzk-diag.rules.pre-destructor-gap]    # a rule by slug or code
    min_ratio = 2.0
    severity = "error"                # optional: replaces the severity the rule computes
    [tool.cuzk-diag.gates]            # read by `cuzk-diag check`

A file given with ``--config`` may be a ``pyproject.toml`` (the ``[tool.cuzk-diag]`` table is used)
or a plain TOML file whose top level is that table.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuzk_diag.errors import ConfigError
from cuzk_diag.records import Severity

TABLE = "cuzk-diag"

#: Top-level keys of the table. ``gates`` belongs to ``cuzk-diag check`` and is passed through.
KNOWN_KEYS = frozenset({"select", "ignore", "fail-on", "rules", "gates"})


@dataclass(slots=True)
class Config:
    """The ``[tool.cuzk-diag]`` table, validated, plus where it came from."""

    raw: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    select: list[str] | None = None  # None = every rule
    ignore: list[str] = field(default_factory=list)
    fail_on: Severity | None = None
    _rules: dict[str, dict[str, Any]] = field(default_factory=dict)  # rule code -> options

    def rule_options(self, code_or_slug: str) -> dict[str, Any]:
        """The options of one rule: its defaults updated with the configured values."""
        from cuzk_diag.rules import get_rule

        rule = get_rule(code_or_slug)
        opts = {o.name: o.default for o in rule.options}
        opts.update(self._rules.get(rule.code, {}))
        return opts

    def severity_override(self, code_or_slug: str) -> Severity | None:
        """The ``severity`` configured for a rule, if any."""
        from cuzk_diag.rules import get_rule

        value = self._rules.get(get_rule(code_or_slug).code, {}).get("severity")
        return Severity.parse(value) if value is not None else None

    def with_cli(
        self,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] | None = None,
        fail_on: str | None = None,
    ) -> Config:
        """A copy with command-line values applied (they win over the file)."""
        sel = _tokens(select) if select else self.select
        ign = self.ignore + _tokens(ignore or ())
        fo = Severity.parse(fail_on) if fail_on else self.fail_on
        _check_selectors(sel or [], "--select")
        _check_selectors(ign, "--ignore")
        return Config(self.raw, self.path, sel, ign, fo, self._rules)

    @property
    def rules_config(self) -> dict[str, dict[str, Any]]:
        """Configured rule options by rule code (only what the file sets)."""
        return {k: dict(v) for k, v in self._rules.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "select": self.select,
            "ignore": list(self.ignore),
            "fail_on": str(self.fail_on) if self.fail_on else None,
            "rules": self.rules_config,
        }


def load_config(path: str | None = None, *, start: str | Path | None = None) -> Config:
    """Read ``path`` (TOML), or the nearest ``pyproject.toml`` with a ``[tool.cuzk-diag]`` table.

    The search starts at ``start`` (default: the current directory) and walks up to the root.
    With no file found the defaults are returned. Raises ``ConfigError`` with the file name and
    the offending key for anything malformed.
    """
    if path is not None:
        p = Path(path)
        data = _read_toml(p)
        tool = data.get("tool")
        if isinstance(tool, dict) and TABLE in tool:
            table = tool[TABLE]
        elif "tool" in data or p.name == "pyproject.toml":
            raise ConfigError(f"{p}: no [tool.{TABLE}] table")
        else:
            table = data
        return from_table(table, str(p))
    found = find_pyproject(Path(start) if start is not None else Path.cwd())
    if found is None:
        return Config()
    return from_table(_read_toml(found)["tool"][TABLE], str(found))


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.cuzk-diag]``.

    A ``pyproject.toml`` on the way that cannot be read or parsed is an error (``ConfigError``
    naming the file and line), never skipped: it may be the one meant to configure the run, and
    skipping it would silently turn its gates off.
    """
    for d in (start.resolve(), *start.resolve().parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            data = _read_toml(candidate)
            tool = data.get("tool")
            if isinstance(tool, dict) and TABLE in tool:
                return candidate
    return None


def from_table(table: Any, where: str = "<config>") -> Config:
    """Validate a ``[tool.cuzk-diag]`` table (already parsed) into a ``Config``."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.{TABLE}] must be a table")
    raw = table
    table = {_norm_key(k): v for k, v in table.items()}
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))} in [tool.{TABLE}] "
            f"(known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    select = _str_list(table, "select", where) if "select" in table else None
    ignore = _str_list(table, "ignore", where) if "ignore" in table else []
    _check_selectors(select or [], f"{where}: select")
    _check_selectors(ignore, f"{where}: ignore")
    fail_on = None
    if "fail-on" in table:
        value = table["fail-on"]
        try:
            fail_on = Severity.parse(value) if isinstance(value, str) else None
        except ValueError as exc:
            raise ConfigError(f"{where}: fail-on: {exc}") from None
        if fail_on is None:
            raise ConfigError(f"{where}: fail-on must be a string (info, warning or error)")
    if "gates" in table and not isinstance(table["gates"], dict):
        raise ConfigError(f"{where}: [tool.{TABLE}.gates] must be a table")
    rules = _rule_tables(table.get("rules", {}), where)
    return Config(dict(raw), where, select, ignore, fail_on, rules)


# -- helpers --------------------------------------------------------------------------------


def _read_toml(p: Path) -> dict[str, Any]:
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{p}: not valid TOML: TOML files are UTF-8; byte 0x{data[exc.start]:02x} "
            f"(at line {line}, column {column}) is not"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None


def _norm_key(key: str) -> str:
    return key.replace("_", "-")


def _str_list(table: dict[str, Any], key: str, where: str) -> list[str]:
    value = table[key]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return _tokens(value)


def _tokens(values: Iterable[str]) -> list[str]:
    """Split comma-separated values and drop blanks: ``["CZ1,CZ2", "x"]`` -> three tokens."""
    return [t.strip() for v in values for t in v.split(",") if t.strip()]


def _check_selectors(tokens: Sequence[str], where: str) -> None:
    if not tokens:
        return  # (the rules, and pandas with them, are imported when they are needed)
    from cuzk_diag.rules import matches_any_rule

    bad = [t for t in tokens if not matches_any_rule(t)]
    if bad:
        raise ConfigError(
            f"{where}: {', '.join(map(repr, bad))} matches no rule code, prefix or slug "
            "(see `cuzk-diag rules`)"
        )


def _rule_tables(value: Any, where: str) -> dict[str, dict[str, Any]]:
    from cuzk_diag.rules import get_rule

    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [tool.{TABLE}.rules] must be a table of rule tables")
    out: dict[str, dict[str, Any]] = {}
    for ref, opts in value.items():
        section = f"[tool.{TABLE}.rules.{ref}]"
        try:
            rule = get_rule(ref)
        except KeyError as exc:
            raise ConfigError(f"{where}: {section}: {exc.args[0]}") from None
        if not isinstance(opts, dict):
            raise ConfigError(f"{where}: {section} must be a table of options")
        known = {o.name: o for o in rule.options}
        merged = out.setdefault(rule.code, {})
        for key, raw in opts.items():
            name = key.replace("-", "_")
            if name in merged:
                raise ConfigError(
                    f"{where}: option {name!r} of {rule.code} ({rule.name}) is set twice"
                )
            if name == "severity":
                if not isinstance(raw, str):
                    raise ConfigError(f"{where}: {section} severity must be a string")
                try:
                    Severity.parse(raw)
                except ValueError as exc:
                    raise ConfigError(f"{where}: {section} severity: {exc}") from None
                merged[name] = raw
                continue
            if name not in known:
                names = ", ".join(["severity", *sorted(known)])
                raise ConfigError(f"{where}: {section}: unknown option {key!r} (options: {names})")
            try:
                merged[name] = known[name].coerce(raw)
            except ValueError as exc:
                raise ConfigError(f"{where}: {section} {name}: {exc}") from None
    return out
