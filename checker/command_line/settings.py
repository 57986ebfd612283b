"""Settings from a file, so CI and laptops do not retype flag sets: ``[tool.isrcheck]`` in pyproject.toml,
or an ``isrcheck.toml``, in the current directory (or the file ``--config`` names), with named profiles::

    [tool.isrcheck]                 # every command whose option takes the value (isrcheck.toml: top level)
    replicas = 3
    [tool.isrcheck.check]           # only `isrcheck check`: any of its options, as spelled on the command line
    time-limit = 600
    set = ["unflushed_loss=1"]
    [tool.isrcheck.gate]
    specs = ["team/versions.py"]    # the command's arguments, by name (gate's SPEC...: specs)
    counterexamples = "team/counterexamples"
    [tool.isrcheck.profiles.ci]     # --profile ci, or ISRCHECK_PROFILE=ci: over the rest of the file
    max-memory = "4G"
    [tool.isrcheck.profiles.ci.gate]
    format = "junit"
    output = "gate.xml"

Precedence: a flag on the command line, then the profile, then the file, then the command's (and the
spec's) defaults. The settings become click's ``default_map``, so a setting is exactly a default the
command line overrides. Every key and value is checked when the file is read, against the options of
the commands: a mistake is a :class:`SettingsError` naming the file, the table and the key (exit 2).
Paths in the file are taken relative to the current directory, as on the command line.

A settings file is read only if it is a regular file of at most 1 MB (a FIFO or a device given to
``--config`` is refused at once, never waited on). A pyproject.toml that is not valid TOML is another
tool's problem unless it has an isrcheck table: it is then the file in use, and a mistake (exit 2).
"""
from __future__ import annotations

import os
import re
import sys

import click

from isrcheck.checker.guards import userfile

if sys.version_info >= (3, 11):
    import tomllib
else:                                       # pragma: no cover - Python 3.10
    import tomli as tomllib

FILES = ("isrcheck.toml", "pyproject.toml")
MAX_BYTES = 1 << 20             # a settings file of a few hundred bytes; a pyproject.toml of a few KB
#: where a pyproject.toml that is not valid TOML still says it has an isrcheck table: ``[tool.isrcheck...]``, a
#: dotted key ``tool.isrcheck.x = ...``, or ``isrcheck = {...}`` / ``isrcheck.x = ...`` in a ``[tool]`` table
OURS = re.compile(r"^\s*(\[\s*)?\"?tool\"?\s*\.\s*\"?isrcheck\b", re.M)
OURS_IN_TOOL = re.compile(r"^\s*\[\s*\"?tool\"?\s*\]\s*$(?:(?!^\s*\[).)*?^\s*\"?isrcheck\"?\s*[.=]", re.M | re.S)


class SettingsError(Exception):
    """A settings file that cannot be used (one line, exit code 2)."""


def find(directory="."):
    """The settings file of ``directory``: isrcheck.toml, else a pyproject.toml with a ``[tool.isrcheck]`` table;
    None when there is neither."""
    for name in FILES:
        path = os.path.normpath(os.path.join(directory, name))
        if os.path.isfile(path) and (name != "pyproject.toml" or _has_table(path)):
            return path
    return None


def _has_table(path):
    """Whether a pyproject.toml has ``[tool.isrcheck]``; one that is not valid TOML (or that cannot be read) is
    another tool's file unless it says it has the table (then :func:`table` names its mistake)."""
    try:
        tool = _read(path).get("tool")
        return isinstance(tool, dict) and "isrcheck" in tool
    except SettingsError:
        try:
            text = userfile.read_bytes(path, "settings file", MAX_BYTES).decode("utf-8", "replace")
        except userfile.UserFileError:
            return False
        return bool(OURS.search(text) or OURS_IN_TOOL.search(text))


def _read(path):
    try:
        return tomllib.loads(userfile.read_text(path, "settings file", MAX_BYTES))
    except userfile.UserFileError as e:
        raise SettingsError(str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{path}: not valid TOML ({e})") from None
    except RecursionError:
        raise SettingsError(f"{path}: not valid TOML (nested too deeply)") from None


def table(path):
    """The isrcheck settings of a file: ``[tool.isrcheck]`` of a pyproject.toml, the whole of any other file."""
    data = _read(path)
    if os.path.basename(path) == "pyproject.toml":
        data = data.get("tool", {}).get("isrcheck")
        if data is None:
            raise SettingsError(f"{path}: no [tool.isrcheck] table")
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: [tool.isrcheck] is not a table")
    return data


def default_map(group, path, profile=None):
    """click's ``default_map`` for the commands of ``group`` from the settings file at ``path``, with ``profile``
    (a name in its ``profiles``) over it."""
    settings = table(path)
    prefix = "tool.isrcheck." if os.path.basename(path) == "pyproject.toml" else ""
    profiles = settings.pop("profiles", {})
    if not isinstance(profiles, dict) or not all(isinstance(p, dict) for p in profiles.values()):
        raise SettingsError(f"{path}: profiles must be tables ([{prefix}profiles.NAME])")
    out = _commands(group, path, settings, prefix)
    layers = {name: _commands(group, path, p, f"{prefix}profiles.{name}.") for name, p in profiles.items()}
    if profile is not None:             # every profile is checked, the one chosen is applied
        if profile not in profiles:
            raise SettingsError(f"{path}: no profile {profile!r} (it has: {', '.join(profiles) or 'none'})")
        for command, values in layers[profile].items():
            out.setdefault(command, {}).update(values)
    return out


def _commands(group, path, settings, prefix):
    """{command: {parameter name: value}} of one level of the file (its tables' names start with ``prefix``):
    shared keys, then each command's table."""
    commands = group.commands
    shared = {k: v for k, v in settings.items() if k not in commands}
    where = f"[{prefix.rstrip('.')}]" if prefix else "top level"
    out = {}
    for key, value in shared.items():
        having = [name for name, cmd in commands.items() if key in _keys(cmd)]
        if not having:
            raise SettingsError(f"{path}: {where}: {key!r} is no option of any command")
        errors = []
        for name in having:             # the commands whose option takes the value (format = "json": not show)
            try:
                out.setdefault(name, {}).update(_value(commands[name], key, value, path, where))
            except SettingsError as e:
                errors.append(e)
        if len(errors) == len(having):
            raise errors[0]
    for name in (k for k in settings if k in commands):
        if not isinstance(settings[name], dict):
            raise SettingsError(f"{path}: {where}: {name} must be a table of {name}'s options ([{prefix}{name}])")
        for key, value in settings[name].items():
            if key not in _keys(commands[name]):
                raise SettingsError(f"{path}: [{prefix}{name}]: {key!r} is no option of isrcheck {name} "
                                    f"(it has: {', '.join(sorted(_keys(commands[name])))})")
            out.setdefault(name, {}).update(_value(commands[name], key, value, path, f"[{prefix}{name}]"))
    return out


def key(param):
    """The key a settings file gives a parameter: an option as spelled on the command line without ``--`` (its
    first long spelling), an argument by name (``spec_names``: ``specs``)."""
    if isinstance(param, click.Option):
        return next((opt[2:] for opt in param.opts if opt.startswith("--")), param.name)
    return param.name.replace("_names", "s").replace("_", "-")


def _keys(command):
    """A command's settable parameters by key (:func:`key`; every long spelling of an option)."""
    keys = {}
    for p in command.params:
        if isinstance(p, click.Option):
            if p.hidden or p.name in ("help", "version"):
                continue
            for opt in p.opts:
                if opt.startswith("--"):
                    keys[opt[2:]] = p
        else:
            keys[key(p)] = p
    return keys


def _value(command, key, value, path, where):
    """{parameter name: value} after checking the value as the command line would (SettingsError if wrong)."""
    param = _keys(command)[key]
    many = param.multiple or (isinstance(param, click.Argument) and param.nargs == -1)
    if many and not isinstance(value, list):
        value = [value]                     # one value of a repeatable option
    items = value if many else [value]
    if getattr(param, "is_flag", False) and not isinstance(value, bool):
        raise SettingsError(f"{path}: {where}: {key} is a flag: true or false")
    for item in items:
        if isinstance(item, (dict, list)) or (isinstance(item, bool) and not getattr(param, "is_flag", False)):
            raise SettingsError(f"{path}: {where}: {key}: {item!r} is not a value of --{key}")
        try:                            # as typed on the command line: 1.5 is no integer, 1e400 no number
            param.type.convert(item if isinstance(item, bool) else str(item), param, None)
        except click.BadParameter as e:
            raise SettingsError(f"{path}: {where}: {key}: {e.message}") from None
    return {param.name: tuple(value) if many else value}
