"""The verdict of a spec's load checks (model/loading.py), kept across processes.

The z3 checks that run when a spec is built depend only on the code the spec runs, its bounds, and the
versions of Python, numpy and z3. Once they pass, a record is written to the native kernels' cache
directory (model/native.py ``cache_dir``) under a digest of exactly that; a later process building the
same spec at the same bounds finds it and skips z3 (not even importing it). The record says only that
the checks passed and which action instances they kept (by label, with the columns each writes): the
instances themselves are enumerated again from the declarations, and the invariants and properties are
the declared ones, so everything a spec carries is built the same way either way. An instance the record
leaves out must be plainly disabled (its guard folds to false on constants, as ``s.require(l != r)`` with
l == r does; ``loading.kept_instances``), or the record is not used: what z3 proved beyond that is not
taken on trust.

The digest covers (``digest``):

- the source bytes of every module the spec's code can reach: the modules of the classes of its MRO,
  then, transitively, every module their globals refer to (a module, a class or function defined in one,
  an instance of such a class) and every module a function of theirs imports in its body; modules of the
  standard library, and numpy and z3, are covered by the versions instead;
- every file of isrcheck's own ``model`` package;
- where each method of each class of the MRO was defined (module, name, line), so a method patched in
  at run time changes it;
- the spec's layout (fields, ranges), the action instances its declarations give, and its bounds;
- the versions of Python, numpy and z3 (z3's by its installed distribution and library file).

A class defined inside a function (or otherwise not reachable as ``module.qualname``) has no digest: its
source does not tell it apart from another class of the same name, so its checks run in every process.
What the digest cannot see is a module's global changed at run time, or a spec reading files or the
environment in code that its layout and instances do not reflect.

A record that cannot be read, does not parse, fails its checksum or does not fit the spec (truncated,
corrupt, from another version) is ignored: the checks run again and the record is rewritten. Records are
JSON, never executed. The checksum catches accidents, not a forger: whoever can write the cache directory
can make a record that says a spec passed (as they could replace the compiled kernels beside it). When
the directory cannot be written the checks just run each time.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
import types

import numpy as np

from isrcheck.model import native

FORMAT = 1                  # bump when a record's meaning changes
MAX_RECORD = 1 << 20        # bytes: a larger file is no record of ours
_OWN = ("numpy", "z3")      # versioned by their releases, not their sources


def digest(spec):
    """The hex digest a record of ``spec``'s load checks is kept under, or None when it cannot be keyed."""
    h = _sources(type(spec), sys.version, np.__version__, _z3_version())
    if h is None:
        return None
    h.update(_part(list(spec.layout.names), spec.layout.lo.tobytes(), spec.layout.hi.tobytes(),
                   spec.layout.boolean.tobytes(), sorted(spec.bounds.items())))
    from isrcheck.model.loading import declared_instances
    h.update(_part([(name, sorted(params.items())) for name, _, params in declared_instances(spec)]))
    return h.hexdigest()


def source_digest(cls, bounds):
    """A digest of what the states of ``cls`` at ``bounds`` can depend on, taken without building the spec: the
    sources ``digest`` covers, and the bounds (None for a class that cannot be keyed)."""
    h = _sources(cls)
    if h is None:
        return None
    h.update(_part(sorted(bounds.items())))
    return h.hexdigest()


def _part(*parts):
    """Parts of a digest, each prefixed by its length (so no two sequences of parts run together alike)."""
    out = b""
    for p in parts:
        b = p if isinstance(p, bytes) else repr(p).encode()
        out += len(b).to_bytes(8, "little") + b
    return out


def _sources(cls, *versions):
    """A sha256 over ``versions``, isrcheck's model package, the modules the classes of ``cls``'s MRO can reach and
    where each of their methods was defined; None when a class of the MRO is not reachable by name."""
    classes = [k for k in cls.__mro__ if k is not object]
    if not all(reachable(k) for k in classes):
        return None
    h = hashlib.sha256()

    def add(*parts):
        h.update(_part(*parts))

    add(FORMAT, *versions)
    model_dir = os.path.dirname(os.path.abspath(native.__file__))
    for name in sorted(os.listdir(model_dir)):
        if name.endswith(".py"):
            add(name, _read(os.path.join(model_dir, name)))
    for module in modules_reached(classes):
        add(module.__name__, _read(module.__file__))
    for k in classes:
        add(k.__module__, k.__qualname__)
        for attr, value in vars(k).items():
            fn = _function(value)
            if fn is not None:
                add(attr, fn.__module__, fn.__qualname__, fn.__code__.co_firstlineno)
    return h


def read(key, spec):
    """label -> written columns of the instances the record under ``key`` kept, or None (no usable record)."""
    if key is None:
        return None
    try:
        fd = os.open(_path(key), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO planted there: no wait
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RECORD:
            return None
        data = os.read(fd, MAX_RECORD + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
        kept = record["kept"]
        if record.get("format") != FORMAT or record.get("key") != key or record.get("check") != _check(key, kept):
            return None
        width = len(spec.layout.names)
        written = {}
        for label, columns in kept:
            if not (isinstance(label, str) and isinstance(columns, list) and label not in written
                    and all(type(c) is int and 0 <= c < width for c in columns) and columns == sorted(set(columns))):
                return None
            written[label] = tuple(columns)
        return written
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def write(key, actions):
    """Record that the load checks passed, keeping ``actions`` (their labels and written columns)."""
    if key is None:
        return
    kept = [[a.label, list(a.written)] for a in actions]
    tmp = None
    try:
        path = _path(key)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"format": FORMAT, "key": key, "kept": kept, "check": _check(key, kept)}, fh)
        os.replace(tmp, path)
    except OSError:                  # a read-only or full cache: the checks run again next time
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _path(key):
    return os.path.join(native.cache_dir(), f"load-{key}.json")


def _check(key, kept):
    """A checksum of a record's content: a corrupted record (a flipped bit, a cut) is not taken for one."""
    return hashlib.sha256(json.dumps([key, kept]).encode()).hexdigest()


def _read(path):
    with open(path, "rb") as fh:
        return fh.read()


def reachable(cls):
    """Whether ``cls`` is what its module's source defines under its qualified name (not a local class)."""
    module = sys.modules.get(cls.__module__)
    if getattr(module, "__file__", None) is None or "<" in cls.__qualname__:
        return False
    found = module
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


def _function(value):
    """The function behind a class attribute (a method, static or class method, property), or None."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    return value if isinstance(value, types.FunctionType) else None


def _keyed(module):
    """Whether a module's source goes into the digest (not the standard library, numpy or z3, nor built in)."""
    top = module.__name__.partition(".")[0]
    path = getattr(module, "__file__", None)
    return (top not in sys.stdlib_module_names and top not in _OWN and isinstance(path, str)
            and path.endswith(".py"))


def modules_reached(classes):
    """The modules the classes' code can reach (see the module docstring), sorted by name."""
    todo = [sys.modules[k.__module__] for k in classes]
    seen = {}
    while todo:
        module = todo.pop()
        if module.__name__ in seen or not _keyed(module):
            continue
        seen[module.__name__] = module
        for value in list(vars(module).values()):
            if isinstance(value, types.ModuleType):
                todo.append(value)
                continue
            kind = value if isinstance(value, (type, types.FunctionType)) else type(value)    # an instance: its class
            owner = sys.modules.get(getattr(kind, "__module__", None) or "")
            if owner is not None:
                todo.append(owner)
            if owner is module:         # imports in the bodies of its functions and methods
                todo += _imported_in(value, module)
    return [seen[name] for name in sorted(seen)]


def _imported_in(value, module):
    """Modules that the code of a function, or of a class's methods, imports (``import x`` in a body)."""
    codes = []
    if isinstance(value, type):
        codes = [fn.__code__ for fn in map(_function, vars(value).values()) if fn is not None]
    elif isinstance(value, types.FunctionType):
        codes = [value.__code__]
    found = []
    while codes:
        code = codes.pop()
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            for candidate in (name, f"{module.__package__}.{name}" if module.__package__ else name):
                if candidate in sys.modules:
                    found.append(sys.modules[candidate])
    return found


def _z3_version():
    """z3's installed distribution and its library file's size and time, read without importing z3."""
    found = importlib.util.find_spec("z3")
    if found is None or not found.origin:
        return None
    package = os.path.dirname(found.origin)
    site = os.path.dirname(package)
    dists = sorted(n for n in os.listdir(site) if n.lower().startswith("z3_solver") and n.endswith("-info"))
    libs = []
    lib_dir = os.path.join(package, "lib")
    if os.path.isdir(lib_dir):
        for n in sorted(os.listdir(lib_dir)):
            info = os.stat(os.path.join(lib_dir, n))
            libs.append((n, info.st_size, info.st_mtime_ns))
    return package, dists, libs
