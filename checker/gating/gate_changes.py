"""``isrcheck gate --changed-since REV``: which specs a change can affect (git, module sources, saved traces).

It never passes what it did not check. A spec is affected by a change to the module of any class it derives
from, to any module of the team's tree its code reaches (its helpers, transitively: the modules
model/load_cache.py keys a spec's load checks by), or to its saved counterexamples; a spec whose code reads
files, imports by name at run time or is not reachable by its name is affected by any change (what it
depends on cannot be followed). Every spec is affected by a change to isrcheck's own engines, to the
settings file, or to a dependency or CI file whose changed lines name isrcheck (its version may differ).
"""
from __future__ import annotations

import ast
import fnmatch
import importlib
import inspect
import os
import subprocess
import sys

from isrcheck.checker.gating.gate_results import GateError
from isrcheck.checker.traces.trace import file_name
from isrcheck.model import load_cache

#: calls through which a module's behaviour can depend on what no import shows
OPAQUE_CALLS = {"open", "exec", "eval", "__import__", "import_module", "run_path", "run_module", "read_text",
                "read_bytes", "spec_from_file_location", "getenv", "environ"}
#: files that can pin isrcheck's version (a dependency list, a lock file, a CI workflow)
PIN_FILES = ("requirements*.txt", "requirements*.in", "constraints*.txt", "pyproject.toml", "setup.cfg", "setup.py",
             "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock", "pdm.lock", "tox.ini", "noxfile.py", "Dockerfile",
             "Makefile", "*.yml", "*.yaml", "environment*.txt")

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


def _own_dirs():
    """isrcheck's own package directories: its modules are followed by the MRO and engine rules, not as helpers."""
    names = [n for n in ("isrcheck", *ENGINE_PACKAGES.values(), "isrcheck.specs") if n in sys.modules]
    return tuple(os.path.realpath(os.path.dirname(sys.modules[n].__file__)) + os.sep for n in names)


def helpers(cls, root):
    """(the files of the team's modules the code of ``cls`` can reach, under ``root`` and outside isrcheck; why
    what it depends on cannot be followed, or None)."""
    classes = [k for k in cls.__mro__ if k is not object]
    unreachable = next((k for k in classes if not load_cache.reachable(k)), None)
    if unreachable is not None:
        return set(), f"{unreachable.__qualname__} is not reachable by its name (defined in a function?)"
    root, own, files = os.path.realpath(root) + os.sep, _own_dirs(), set()
    todo = list(load_cache.modules_reached(classes))
    while todo:
        module = todo.pop()
        path = os.path.realpath(getattr(module, "__file__", None) or "")
        if path in files or not path.startswith(root) or path.startswith(own):
            continue
        files.add(path)
        tree = _parsed(path)
        opaque = _opaque(tree, path)
        if opaque:
            return files, opaque
        todo += _imports(tree, module)      # a constant imported by value is no global the digest follows
    return files, None


def _parsed(path):
    try:
        with open(path, "rb") as fh:
            return ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None


def _imports(tree, module):
    """The loaded modules a module's source imports (``import a.b``, ``from a import b``, relative ones too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = (module.__package__ or "").split(".")
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [sys.modules[n] for n in names if n in sys.modules]
    return found


def _opaque(tree, path):
    """Where a module's source calls something through which it can depend on what no import shows, or None."""
    if tree is None:
        return f"{os.path.relpath(path)}: its source cannot be read"
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        elif isinstance(node, ast.Attribute) and node.attr == "environ":
            name = "environ"
        if name in OPAQUE_CALLS:
            return f"{os.path.relpath(path)}:{node.lineno} uses {name}: what it depends on cannot be followed"
    return None


def affected_specs(registry, changed, root=".", counterexamples="counterexamples", reasons=None):
    """Names of the specs whose behaviour can change with the ``changed`` files.

    ``changed`` are paths relative to ``root`` (the repository's top level), as
    ``git diff --name-only`` prints them. A change under ``model/`` or ``checker/``
    affects every spec; a module that defines a spec class or one of its ancestors
    (by the class's MRO), or a module of the team's tree its code reaches (:func:`helpers`),
    affects that spec; a change under ``<counterexamples>/<spec>/`` affects that spec;
    any change affects a spec whose dependencies cannot be followed (``reasons``, a dict,
    gets why, by spec name); anything else affects none.
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
        team, opaque = helpers(cls, root)
        if opaque and changed:
            if reasons is not None:
                reasons[name] = opaque
            out.append(name)
        elif (_source_paths(cls) | team) & (changed | changed_abs) \
                or any(c.startswith(f"{p}{file_name(name)}/") for c in changed for p in cx_prefixes):
            out.append(name)
    return out


def everything(changed, root, rev, settings_file=None):
    """Why every spec must be checked, whatever it imports (None when nothing says so): the settings file changed,
    or a dependency or CI file's changed lines name isrcheck."""
    root = os.path.realpath(root)
    if settings_file is not None:
        rel = os.path.relpath(os.path.realpath(settings_file), root).replace(os.sep, "/")
        if rel in changed and (os.path.basename(rel) != "pyproject.toml" or _tool_table(root, rev, rel)):
            return f"the settings file {rel} changed"
    for path in changed:
        if not any(fnmatch.fnmatch(os.path.basename(path), pattern) for pattern in PIN_FILES):
            continue
        diff = _git(["diff", rev, "--", path], root)
        lines = diff.stdout.splitlines() if diff.returncode == 0 and diff.stdout else _text(root, path)
        if any("isrcheck" in line.lower() for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---")):
            return f"{path} changed a line naming isrcheck (its version may differ)"
    return None


def _text(root, path):
    """A new (untracked) file's lines, as a diff would add them."""
    try:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
            return ["+" + line for line in fh.read(1 << 20).splitlines()]
    except OSError:
        return []


def _tool_table(root, rev, rel):
    """Whether pyproject.toml's ``[tool.isrcheck]`` differs between ``rev`` and the work tree."""
    from isrcheck.checker.command_line.settings import tomllib
    before = _git(["show", f"{rev}:{rel}"], root)
    try:
        old = tomllib.loads(before.stdout) if before.returncode == 0 else {}
        with open(os.path.join(root, rel), "rb") as fh:
            new = tomllib.load(fh)
    except (OSError, ValueError):
        return True                     # cannot tell: take it as changed
    return old.get("tool", {}).get("isrcheck") != new.get("tool", {}).get("isrcheck")


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
