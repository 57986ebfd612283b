"""Which of a command's values came from a settings file or its profile, said on the command's header line.

A settings file (checker/command_line/settings.py) supplies defaults the command line overrides; a value that changes a
headline command's result must not do so unseen. :func:`note` words what the file and the profile gave the
command running now (``bounds from isrcheck.toml [profile ci]: max_epochs=2``); :func:`as_json` gives the
same as data. The group records which file and profile it read (:func:`remember`); a command reads the
sources of its values from click (``ParameterSource.DEFAULT_MAP``).
"""
from __future__ import annotations

import click
from click.core import ParameterSource

KEY = "isrcheck.settings"


def remember(ctx, path, profile, bounds):
    """Record the settings file (and profile) the group read, for the commands it runs; ``bounds``: the names of
    the parameters that are bounds of the state space (the rest but ``--set`` are the commands' options)."""
    ctx.meta[KEY] = (path, profile, frozenset(bounds))


def settings_file():
    """The settings file the running command reads, or None."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta[KEY][0] if ctx is not None and KEY in ctx.meta else None


def from_file(values):
    """The names among ``values`` (a command's parameters) whose value the settings file gave."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return set()
    return {k for k in values if ctx.get_parameter_source(k) is ParameterSource.DEFAULT_MAP}


def _given(ctx=None):
    """[(kind, source, {key: value})] of the values the settings gave the current command: kind "bounds" (bounds and
    model options) or "options" (the command's other options); source ``FILE`` or ``FILE [profile P]``."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None or KEY not in ctx.meta:
        return []
    path, profile, bounds = ctx.meta[KEY]
    from isrcheck.checker.command_line import settings
    group = ctx.find_root().command
    name = ctx.command.name
    try:
        base = settings.default_map(group, path, None).get(name, {}) if profile else None
    except settings.SettingsError:      # read once already by the group: it does not fail now
        base = None
    out = {}
    for param in ctx.command.params:
        if ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT_MAP:
            continue
        value = (ctx.default_map or {}).get(param.name)       # as the file spells it ("4G", not bytes)
        from_profile = profile is not None and (base is None or base.get(param.name, object()) != value)
        source = f"{path} [profile {profile}]" if from_profile else path
        kind = "bounds" if param.name in bounds or param.name == "settings" else "options"
        items = out.setdefault((kind, source), {})
        if param.name == "settings":                        # --set KEY=VALUE pairs
            items.update(item.split("=", 1) for item in value)
        elif param.name in bounds:
            items[param.name] = value
        else:
            items[settings.key(param)] = value
    return [(kind, source, items) for (kind, source), items in out.items()]


def note():
    """The settings' part of a header line, or "" when no value came from a settings file."""
    return " · ".join(f"{kind} from {source}: " + " ".join(f"{k}={_text(v)}" for k, v in items.items())
                      for kind, source, items in _given())


def as_json():
    """The values the settings gave, as ``--format json`` reports them (an empty list when none)."""
    return [{"kind": kind, "from": source, "values": items} for kind, source, items in _given()]


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(value)
