"""Which protocol versions a ``--spec`` can name: the built-in ones, installed plugins, and a team's own.

A spec reference is one of::

    kip-320                    a registered name: built in (``isrcheck.specs.SPECS``) or from a plugin
    path/to/versions.py:Name   the class Name defined in that file (the file's folder is put on the import
                               path first, so it can import its neighbours, as ``python path/to/versions.py``)
    package.module:Name        the class Name of an importable module
    path/to/versions.py        (the gate's SPEC arguments) every named Spec subclass the file defines

Plugins are installed packages that declare an entry point in the group ``isrcheck.specs``, each
naming one Spec subclass (``[project.entry-points."isrcheck.specs"] my-version = "team.versions:Mine"``);
the class registers under its own ``name``. Anything that is not there, does not import, or is not a
Spec subclass is a :class:`SpecRefError` (one line: exit code 2 on the command line).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from functools import lru_cache

from isrcheck.checker.guards import fence
from isrcheck.checker.command_line import variants
from isrcheck.model.spec import Spec
from isrcheck.specs import SPECS

GROUP = "isrcheck.specs"


class SpecRefError(ValueError):
    """A spec reference that cannot be resolved (one line)."""


def _spec_class(obj, ref):
    if not (isinstance(obj, type) and issubclass(obj, Spec)):
        raise SpecRefError(f"{ref}: {getattr(obj, '__name__', type(obj).__name__)} is not a Spec subclass")
    if not obj.name:
        raise SpecRefError(f"{ref}: {obj.__name__} has no name (set the class attribute name = \"...\")")
    unnamed = variants.unnamed(obj)
    if unnamed:
        raise SpecRefError(unnamed)
    return obj


def _load_file(path):
    """Import a Python file once per (absolute path, content) under a private module name."""
    path = os.path.abspath(path)
    try:
        with open(path, "rb") as fh:
            digest = hashlib.sha1(fh.read()).hexdigest()[:12]
    except OSError as e:
        raise SpecRefError(f"{path}: cannot read ({e.strerror})") from None
    name = f"_isrcheck_user_{os.path.splitext(os.path.basename(path))[0]}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
    sys.modules[name] = module
    try:
        fence.call(f"{path}: cannot import", module.__spec__.loader.exec_module, module)
    except fence.UserCodeError as e:
        del sys.modules[name]
        raise SpecRefError(str(e)) from None
    except BaseException:           # a signal, or out of memory: the half-run module is not kept either
        del sys.modules[name]
        raise
    return module


def _import(name):
    """The module ``name``, or None when there is no such module (a module it imports may be missing: that
    is its error). One the import path does not have is looked for from the working directory too (as
    ``python -m`` does), so MODULE:CLASS works from a team repository's top level."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        here = os.getcwd()
        if e.name and name.startswith(e.name) and here not in sys.path:
            sys.path.append(here)
            return _import(name)
        if e.name and name.startswith(e.name):
            return None
        raise


def _load_module(name):
    try:
        module = fence.call(f"module {name}: cannot import", _import, name)
    except fence.UserCodeError as e:
        raise SpecRefError(str(e)) from None
    if module is None:
        raise SpecRefError(f"no module {name!r} (nor a file: a file reference ends in .py)")
    return module


@lru_cache(maxsize=None)
def plugins():
    """({name: Spec class} of the installed plugins, [one line per plugin that failed to load])."""
    from importlib.metadata import entry_points     # reading every installed package's metadata: only when asked
    found, errors = {}, []
    for ep in entry_points(group=GROUP):
        where = f"plugin {ep.name} ({ep.value})"
        try:
            cls = _spec_class(fence.call(f"{where}: cannot load", ep.load), where)
        except (SpecRefError, fence.UserCodeError) as e:
            errors.append(str(e))
            continue
        if cls.name in SPECS and SPECS[cls.name] is not cls:
            errors.append(f"{where}: the name {cls.name!r} is a built-in spec's; rename it")
        else:
            found[cls.name] = cls
    return found, errors


def known():
    """{name: Spec class}: the built-in specs, then the installed plugins."""
    return {**SPECS, **plugins()[0]}


def resolve(ref):
    """The Spec class a reference names (see the module doc)."""
    if ref in SPECS:                # a built-in name: no plugin may take it (``plugins``), so none is read
        return SPECS[ref]
    registry = known()
    if ref in registry:
        return registry[ref]
    if ref.endswith(".py") and ":" not in ref:     # a file without a class: say which classes it has
        raise SpecRefError(variants.listing(ref, resolve_all(ref)))
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr:
        broken = "".join(f"; {e}" for e in plugins()[1])
        raise SpecRefError(f"unknown spec {ref!r} (known: {', '.join(registry)}; or name a class: FILE.py:CLASS "
                           f"or MODULE:CLASS){broken}")
    if target.endswith(".py"):
        if not os.path.isfile(target):
            raise SpecRefError(f"{target}: no such file")
        module = _load_file(target)
    else:
        module = _load_module(target)
    obj = getattr(module, attr, None)
    if obj is None:
        raise SpecRefError(f"{ref}: {target} defines no {attr!r}")
    return _spec_class(obj, ref)


def resolve_all(ref):
    """The Spec classes a gate argument names: a reference as for :func:`resolve`, or a ``.py`` file without
    a class, for every named Spec subclass that file defines, in the order it defines them."""
    if not ref.endswith(".py") or ref in known():
        return [resolve(ref)]
    if not os.path.isfile(ref):
        raise SpecRefError(f"{ref}: no such file")
    module = _load_file(ref)
    found, unnamed = variants.defined(module)
    if unnamed:
        raise SpecRefError(unnamed[0])
    if not found:
        raise SpecRefError(f"{ref}: defines no Spec subclass with a name")
    return found


def reference(cls):
    """What to type to name ``cls`` again on the command line: its name when registered, else FILE.py:CLASS
    (relative to the working directory when under it) or MODULE:CLASS."""
    if (SPECS[cls.name] if cls.name in SPECS else plugins()[0].get(cls.name)) is cls:    # known(), one name loaded
        return cls.name
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if cls.__module__.startswith("_isrcheck_user_") and path:
        rel = os.path.relpath(path)
        return f"{path if rel.startswith('..') else rel}:{cls.__qualname__}"
    return f"{cls.__module__}:{cls.__qualname__}"


def show_command(cls, path):
    """The command that reads a trace of ``cls``: ``isrcheck show PATH``, naming the class when not registered."""
    ref = reference(cls)
    return f"isrcheck show {path}" + (f" --spec {ref}" if ref != cls.name else "")
