"""The numpy backend's compiled kernels (model/compile.py), kept across processes.

Tracing a spec's actions and invariants and compiling the numpy code they give costs about 0.1 s of CPU
per process (tla-kip320 at 3 replicas: 60 action instances), a seventh of a whole ``isrcheck check`` of
737,794 states. The kernels depend only on what the spec's load-check record is keyed by
(model/load_cache.py ``digest``: the code the spec runs, every file of the ``model`` package, which
includes the code generator, the layout, the bounds, the versions of Python and numpy), and on the action
instances and invariants the spec carries; so they are written once, as Python code objects (``marshal``,
whose format the Python version in the digest fixes), into the native kernels' cache directory
(model/native.py ``cache_dir``), under a digest of all that.

A file that cannot be read, fails its checksum or does not hold one code object per kernel the spec needs
is ignored and rewritten. Code objects are executed: like the compiled native kernels beside them, whoever
can write the cache directory can change what runs (the checksum catches accidents, not a forger). When the
spec cannot be keyed (a class defined inside a function) or the directory cannot be written, the kernels
are built in each process.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import types

from isrcheck.model import load_cache, native

FORMAT = 1                  # bump when the payload's meaning changes
MAX_FILE = 64 << 20         # bytes: a larger file is none of ours
CHECK = 32                  # bytes of sha256 before the payload


def key(spec):
    """The hex digest the kernels of ``spec`` are kept under, or None when it cannot be keyed."""
    base = load_cache.digest(spec)
    if base is None:
        return None
    actions = [(a.label, a.id) for a in spec.actions]
    return hashlib.sha256(repr((FORMAT, base, actions, sorted(spec.invariants))).encode()).hexdigest()


def read(key, spec):
    """(guards code, [(written columns, update code)] per action instance, {invariant: code}) of ``spec`` kept
    under ``key``, or None."""
    if key is None:
        return None
    try:
        path = _path(key)
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE:     # not a FIFO someone planted there
            return None
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE + 1)
    except OSError:
        return None
    check, payload = data[:CHECK], data[CHECK:]
    if check != _check(key, payload):
        return None
    try:
        guards, updates, kept = marshal.loads(payload)
        width = len(spec.layout.names)
        if not (_code(guards) and len(updates) == len(spec.actions) and sorted(kept) == sorted(spec.invariants)
                and all(_code(code) and all(type(c) is int and 0 <= c < width for c in columns)
                        for columns, code in updates)
                and all(_code(code) for code in kept.values())):
            return None
        return guards, [(list(columns), code) for columns, code in updates], kept
    except (ValueError, TypeError, EOFError, AttributeError):
        return None


def write(key, guards, updates, kept):
    """Keep the kernels ``read`` returns under ``key``."""
    if key is None:
        return
    payload = marshal.dumps((guards, [(tuple(columns), code) for columns, code in updates], kept))
    tmp = None
    try:
        path = _path(key)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(_check(key, payload) + payload)
        os.replace(tmp, path)
    except OSError:                  # a read-only or full cache: the kernels are built again next time
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _path(key):
    return os.path.join(native.cache_dir(), f"batch-{key}.marshal")


def _check(key, payload):
    return hashlib.sha256(key.encode() + payload).digest()


def _code(value):
    return isinstance(value, types.CodeType)
