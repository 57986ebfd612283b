"""Options given on the command line that the run would not use: refused (exit 2), never silently ignored.

``--depth 20`` with the exhaustive engine, ``--symmetry`` with bounded model checking or ``--master``
without Spark change nothing; a user who typed them believes they did. Only what was typed (or set in
the environment) is checked: a settings file may hold options for several engines.
"""
from __future__ import annotations

import click
from click.core import ParameterSource

from isrcheck.checker.engine import engines

#: options that only mean something alongside another: parameter name -> the options (any of them) it needs
NEEDS = {"checkpoint_every": ("checkpoint", "resume")}


def _given(ctx, name):
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _flag(ctx, name):
    return next(p.opts[0] for p in ctx.command.params if p.name == name)


def refuse(ctx, engine):
    """Raise a UsageError naming the first option typed that ``engine`` (and the other options) would not use."""
    for name, readers in engines.readers().items():
        if engine not in readers and _given(ctx, name):
            raise click.UsageError(f"{_flag(ctx, name)} does nothing with --engine {engine} (it is for --engine "
                                   f"{' or '.join(readers)})")
    for name, needs in NEEDS.items():
        if _given(ctx, name) and not any(ctx.params.get(n) for n in needs):
            raise click.UsageError(f"{_flag(ctx, name)} does nothing without "
                                   f"{' or '.join(_flag(ctx, n) for n in needs)}")
