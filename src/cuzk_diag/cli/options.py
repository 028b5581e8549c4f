"""Options shared by several commands: one definition, the same name and help everywhere."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

color_option = click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the console output (auto: only on a terminal and without NO_COLOR).",
)

config_option = click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="TOML config (a pyproject.toml or a plain file); default: the nearest pyproject.toml "
    "with a [tool.cuzk-diag] table.",
)

alpha_option = click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Significance level of the regression tests (default: gates.alpha of the config, "
    "else 0.05).",
)

allow_different_config_option = click.option(
    "--allow-different-config",
    is_flag=True,
    help="Compare runs even when era, GPUs, gw, proof kind or cuzk-bench -c/-j differ.",
)


def stdout() -> TextIO:
    """The report stream (what click's test runner captures, too)."""
    return sys.stdout
