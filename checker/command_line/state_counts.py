"""How many distinct states a spec has at its default bounds, kept across processes for ``isrcheck list --brief``.

A complete exhaustive search at a spec's defaults without symmetry reduction (``check``, the gate, the API)
records its count in the kernels' cache directory (model/native.py ``cache_dir``) under
``load_cache.source_digest``: the sources the spec runs and isrcheck's model package, so a change to any of
them makes the count unknown again rather than stale. A record is a small JSON object, never executed; one
that cannot be read or does not fit is no record.
"""
from __future__ import annotations

import json
import os

from isrcheck.checker.traces.trace import read_text
from isrcheck.model import load_cache, native

def _path(cls):
    key = load_cache.source_digest(cls, cls.defaults)
    return None if key is None else os.path.join(native.cache_dir(), f"states-{key}.json")


def record(spec, result, symmetry=False):
    """Keep ``result.distinct_states`` when ``result`` is a complete search of ``spec`` at its class's defaults."""
    cls = type(spec)
    if symmetry or not result.complete or type(result.distinct_states) is not int \
            or dict(spec.bounds) != dict(cls.defaults):
        return
    path = _path(cls)
    if path is None:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"spec": spec.name, "distinct_states": int(result.distinct_states)}, fh)
        os.replace(tmp, path)
    except OSError:                 # a read-only or full cache: the count is just not kept
        if os.path.exists(tmp):
            os.unlink(tmp)


def recall(cls):
    """The distinct states of ``cls`` at its defaults, when a complete search of the same sources recorded it."""
    path = _path(cls)
    if path is None:
        return None
    if not os.path.exists(path):
        return None
    try:
        data = json.loads(read_text(path))       # a regular file of bounded size, or TraceError (a ValueError)
        count = data["distinct_states"]
    except (ValueError, TypeError, KeyError):
        return None
    return count if data.get("spec") == cls.name and type(count) is int and count > 0 else None
