"""``isrcheck gate --changed-since REV``: which specs a change can affect (git, module sources, saved traces)."""
from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys

from isrcheck.checker.gate_results import GateError
from isrcheck.checker.trace import file_name

ENGINE_PACKAGES = {"model": "isrcheck.model", "checker": "isrcheck.checker"}   # repo folder -> package; a change in either can change every spec


def select(registry, names):
    """The registry names to check, in registry order (GateError on an unknown name)."""
    for n in names:
        if n not in registry:
            raise GateError(f"unknown spec {n!r} (known: {', '.join(registry)})")
    wanted = set(names)
    return [n for n in registry if not wanted or n in wanted]


def _source_paths(cls):
    """Paths of the modules defining cls and every class it inherits from.

    Each is given twice over: the absolute real path, and the path relative to the
    directory holding the class's top-level package (``specs/kip_320.py``), which is
    also its path in the repository when isrcheck is installed from a copy of it.
    """
    out = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        try:
            path = inspect.getsourcefile(klass)
        except TypeError:                # built-in
            continue
        if not path:
            continue
        path = os.path.realpath(path)
        out.add(path)
        top = sys.modules.get(klass.__module__.split(".")[0])
        top_file = getattr(top, "__file__", None)
        if top_file:
            base = os.path.dirname(top_file)
            if os.path.basename(top_file) == "__init__.py":     # a package: paths are relative to its parent
                base = os.path.dirname(base)
            out.add(os.path.relpath(path, os.path.realpath(base)).replace(os.sep, "/"))
    return out


def _engine_prefixes(root):
    prefixes = {f"{folder}/" for folder in ENGINE_PACKAGES}
    for pkg in ENGINE_PACKAGES.values():
        mod = importlib.import_module(pkg)
        rel = os.path.relpath(os.path.realpath(os.path.dirname(mod.__file__)), os.path.realpath(root))
        if not rel.startswith(".."):
            prefixes.add(rel.replace(os.sep, "/").rstrip("/") + "/")
    return prefixes


def affected_specs(registry, changed, root=".", counterexamples="counterexamples"):
    """Names of the specs whose behaviour can change with the ``changed`` files.

    ``changed`` are paths relative to ``root`` (the repository's top level), as
    ``git diff --name-only`` prints them. A change under ``model/`` or ``checker/``
    affects every spec; a module that defines a spec class or one of its ancestors
    (by the class's MRO) affects that spec; a change under
    ``<counterexamples>/<spec>/`` affects that spec; anything else affects none.
    """
    root = os.path.realpath(root)
    changed = {c.replace(os.sep, "/") for c in changed}
    engine = _engine_prefixes(root)
    if any(c.startswith(p) for c in changed for p in engine):
        return list(registry)
    cx = os.path.relpath(os.path.realpath(counterexamples), root).replace(os.sep, "/")
    cx_prefixes = {f"{cx}/"} if not cx.startswith("..") else set()
    cx_prefixes.add(f"{os.path.basename(os.path.normpath(counterexamples))}/")
    changed_abs = {os.path.realpath(os.path.join(root, c)) for c in changed}
    out = []
    for name, cls in registry.items():
        sources = _source_paths(cls)
        if sources & (changed | changed_abs) \
                or any(c.startswith(f"{p}{file_name(name)}/") for c in changed for p in cx_prefixes):
            out.append(name)
    return out


def _git(args, cwd=None):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd)
    except OSError as e:
        raise GateError(f"--changed-since needs git ({e.strerror})") from None


def changed_files(rev, cwd=None):
    """(repository top level, files changed since ``rev``: ``git diff --name-only REV``, and the untracked files
    git does not ignore: a new spec module is a change too)."""
    if not rev or rev.startswith("-"):
        raise GateError(f"--changed-since: {rev!r} is not a git revision")
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise GateError("--changed-since: not inside a git repository")
    commit = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
    if commit.returncode != 0:
        raise GateError(f"--changed-since: unknown git revision {rev!r} "
                        f"(in CI, check out with fetch-depth: 0 so the base branch is there)")
    diff = _git(["-c", "diff.relative=false", "diff", "--name-only", "--no-renames", commit.stdout.strip(), "--"],
                cwd)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "--full-name"], top.stdout.strip())
    for listing in (diff, untracked):
        if listing.returncode != 0:
            msg = (listing.stderr.strip().splitlines() or ["git failed"])[-1]
            raise GateError(f"--changed-since {rev}: {msg}")
    return top.stdout.strip(), [line for out in (diff, untracked) for line in out.stdout.splitlines() if line]
