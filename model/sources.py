"""Where a spec's declarations are in its files, so a declaration error names the user's file and line.

``path:line`` is given relative to the working directory when the file is under it. An error raised while
a spec is built (model/loading.py runs each action instance, invariant and property on z3) is placed by
its traceback: the innermost frame in one of the spec's own files (the modules of the classes it derives
from) or in a file outside isrcheck and the Python installation (the team's helpers), so a Python ``if``
on a state value is named at the line holding the ``if``. An error found after the code ran (a write that
can leave a field's range) is placed at the declaration its message names (``action fetch(...)``,
``invariant log-matching``, ``property hw-advances``).
"""
from __future__ import annotations

import inspect
import os
import re
import sys

#: a located message starts with ``path:line: ``
_LOCATED = re.compile(r"^[^\s:]+\.py:\d+: ")
#: the declaration a loading error names, at the start of its message
_SUBJECT = re.compile(r"^(action|invariant|property) ([A-Za-z0-9_\-]+)")


def shown(path):
    """A path as messages give it: relative to the working directory when under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:                  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def of_object(obj):
    """``path:line`` where a function or class is defined, or None when its source is not in a file."""
    obj = inspect.unwrap(getattr(obj, "__func__", obj))
    try:
        path = inspect.getsourcefile(obj)
        line = obj.__code__.co_firstlineno if hasattr(obj, "__code__") else inspect.getsourcelines(obj)[1]
    except (TypeError, OSError):
        return None
    return f"{shown(path)}:{line}" if path else None


def of_attribute(cls, attr):
    """``path:line`` of the definition of ``attr`` in the body of ``cls`` (a method, or an assignment), else of the
    class; None when its source is not in a file."""
    value = vars(cls).get(attr)
    fn = inspect.unwrap(getattr(value, "__func__", value)) if value is not None else None
    if inspect.isfunction(fn) and fn.__qualname__.startswith(f"{cls.__qualname__}."):
        return of_object(fn)
    try:
        path = inspect.getsourcefile(cls)
        lines, start = inspect.getsourcelines(cls)
    except (TypeError, OSError):
        return None
    assign = re.compile(rf"^\s+{re.escape(attr)}\s*(:[^=]*)?=")
    line = next((start + i for i, text in enumerate(lines) if assign.match(text)), start)
    return f"{shown(path)}:{line}"


def _engine_dirs():
    """isrcheck's own code (the engines and the modelling layer) and the Python installation: not spec code.

    The packages are looked up in ``sys.modules`` by name: an import here would be followed by
    model/load_cache.py's digest into whichever checker modules a process happens to have loaded."""
    packages = [sys.modules[name] for name in ("isrcheck", "isrcheck.checker", "isrcheck.model") if name in sys.modules]
    dirs = [os.path.dirname(os.path.abspath(m.__file__)) for m in packages]
    dirs += [os.path.abspath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    dirs += [os.path.abspath(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))]   # user sites too
    return [d.rstrip(os.sep) + os.sep for d in dirs]


def _spec_files(cls):
    """The files of the classes ``cls`` derives from (its family's module too), but not of Spec itself."""
    out = set()
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "isrcheck.model.spec"):
            continue
        try:
            path = inspect.getsourcefile(klass)
        except TypeError:
            continue
        if path:
            out.add(os.path.abspath(path))
    return out


def of_error(error, cls):
    """``path:line`` of the spec code an error raised while building ``cls`` comes from, or None."""
    own, engine = _spec_files(cls), _engine_dirs()
    seen, exc = set(), error
    while exc is not None and id(exc) not in seen:      # an error re-raised ``from None`` keeps its cause in context
        seen.add(id(exc))
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
            tb = tb.tb_next
        for path, line in reversed(frames):
            full = os.path.abspath(path)
            if not path.startswith("<") and (full in own or not full.startswith(tuple(engine))):
                return f"{shown(path)}:{line}"
        exc = exc.__context__
    subject = _SUBJECT.match(str(error))
    if subject:
        kind, name = subject.groups()
        if kind == "action":
            fn = getattr(cls, name, None)
        else:
            marker = "__isrcheck_invariant__" if kind == "invariant" else "__isrcheck_leads_to__"
            fn = next((f for _, f in cls._members(marker, False)
                       if (getattr(f, marker) if kind == "invariant" else getattr(f, marker)[0]) == name), None)
        if fn is not None:
            return of_object(fn)
    return None


def of_class_error(cls, message):
    """``path:line`` of what a declaration error found when ``cls`` was created is about: the attribute of the
    class its message names (``Cls.attr``, a configuration, ``not_modelled``), else the class itself."""
    named = re.search(rf"\b{re.escape(cls.__name__)}\.(\w+)", message)
    attr = named.group(1) if named and named.group(1) in vars(cls) else next(
        (a for a, words in (("configurations", "configuration '"), ("not_modelled", "not_modelled"))
         if words in message and a in vars(cls)), None)
    return of_attribute(cls, attr) if attr else of_object(cls)


def located(message, where):
    """``message`` prefixed with ``where: `` (when known and not there already)."""
    return message if where is None or _LOCATED.match(message) else f"{where}: {message}"
