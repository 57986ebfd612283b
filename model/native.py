"""Native kernels: a spec's traced graphs emitted as fused per-chunk loops and compiled by numba.

The numpy kernels (model/compile.py) evaluate every node of a guard and an update
over a whole batch, one temporary array per node. Here the same hash-consed graphs
(``backends.trace_action``, ``trace_invariant``) become one scalar loop per action
instance, with the parameters folded in as constants: for each row of a chunk the
guard, then (only where it holds) the written cells, the successor's fingerprint
by linear delta (checker/exhaustive/fingerprint.py's ``R[c] * (new - old)``, modulo 2**64)
and the self-loop test; a successor is written as (row, fingerprint, new cells)
into preallocated outputs. Each instance is one small function and each invariant
one more, each in a generated module of its own (one large function takes numba
minutes: its compile time grows faster than its size, which is also why selects
are written as arithmetic, not branches).

Compiling costs about half a second of CPU per function, so each module is written
to a cache directory under the hash of its source and imported from there with
numba's ``cache=True``: a kernel compiles once per machine (a lock file beside it makes a second
process that needs it meanwhile wait for the first, then load it), and specs that share
an action or an invariant (most versions do) share its compiled code. The directory is ``$ISRCHECK_CACHE_DIR``,
else ``$XDG_CACHE_HOME/isrcheck`` (``~/.cache/isrcheck``), else a temporary one
when those cannot be written. The kernels release the GIL (``nogil``), so chunks
expand on several threads at once.

The numpy backend stays the reference: tests/test_conformance.py compares the two.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile

import numpy as np

# as in checker/exhaustive/kernels.py: numba's import of scipy must not start OpenBLAS threads (a hang under ulimit -v)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    import fcntl
except ImportError:         # Windows: no lock; two processes may compile the same kernel
    fcntl = None

from isrcheck.model.compile import Node, _children_first, _const, _plain

FORMAT = 1              # bump when the generated code changes meaning without changing text

_BINARY = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
           "ne": "!=", "and": "&", "or": "|"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}


def cache_dir():
    """A writable directory for compiled kernels (see the module docstring for the order tried)."""
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for d in (os.environ.get("ISRCHECK_CACHE_DIR"), os.path.join(xdg, "isrcheck"),
              os.path.join(tempfile.gettempdir(), f"isrcheck-{os.getuid() if hasattr(os, 'getuid') else 0}")):
        if not d:
            continue
        d = os.path.join(d, "kernels")
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            continue
        if os.access(d, os.W_OK | os.X_OK):
            return d
    return tempfile.mkdtemp(prefix="isrcheck-kernels-")


class _Emitter:
    """Scalar Python (numba) code for the nodes of one graph, with a type (bool or int) per node."""

    def __init__(self, layout, prefix):
        self.layout, self.prefix = layout, prefix
        self.names, self.boolean = {}, {}

    def is_bool(self, v):
        if _const(v):
            return isinstance(v, (bool, np.bool_))
        return self.boolean[v.id]

    def ref(self, v):
        if _const(v):
            return repr(_plain(v))
        return self.names[v.id]

    def _define(self, v):
        """(expression, is boolean) of node v, its arguments already named."""
        if v.op == "col":
            c, boolean = v.args
            return (f"(B[{c}, r] != 0)", True) if boolean else (f"np.int64(B[{c}, r])", False)
        a = [self.ref(x) for x in v.args]
        bools = [self.is_bool(x) for x in v.args]
        if v.op in _COMPARE:
            return f"({a[0]} {_BINARY[v.op]} {a[1]})", True
        if v.op in ("and", "or"):
            if all(bools):
                return f"({a[0]} {_BINARY[v.op]} {a[1]})", True
            a = [f"np.int64({x})" if b else x for x, b in zip(a, bools)]
            return f"({a[0]} {_BINARY[v.op]} {a[1]})", False
        if v.op in ("add", "sub", "mul"):
            a = [f"np.int64({x})" if b else x for x, b in zip(a, bools)]
            return f"({a[0]} {_BINARY[v.op]} {a[1]})", False
        # no branches (``x if c else y`` is a basic block each, which numba compiles very slowly): selects
        # by arithmetic, on int64 (a bool times an int is an int)
        if v.op == "not":
            return (f"({a[0]} ^ True)", True) if bools[0] else (f"(~{a[0]})", False)
        if v.op == "where":
            cond = a[0] if bools[0] else f"({a[0]} != 0)"
            if bools[1] and bools[2]:
                return f"(({cond} & {a[1]}) | (({cond} ^ True) & {a[2]}))", True
            x, y = (f"np.int64({s})" if b else s for s, b in zip(a[1:], bools[1:]))
            return f"({y} + {cond} * ({x} - {y}))", False
        if v.op in ("min", "max"):
            a = [f"np.int64({x})" if b else x for x, b in zip(a, bools)]
            return f"({a[1]} + ({a[0]} {'<' if v.op == 'min' else '>'} {a[1]}) * ({a[0]} - {a[1]}))", False
        raise ValueError(f"unknown node {v.op}")

    def emit(self, root, lines, indent):
        """Lines defining root's nodes not defined yet; returns root's expression."""
        for v in _children_first(root, self.names):
            text, boolean = self._define(v)
            name = f"{self.prefix}{v.id}"
            self.names[v.id], self.boolean[v.id] = name, boolean
            lines.append(f"{indent}{name} = {text}")
        return self.ref(root)

    def as_int8(self, v):
        """The expression of v as it is stored in a cell (booleans 0/1)."""
        return f"np.int64({self.ref(v)})" if self.is_bool(v) else self.ref(v)


_HEADER = [f"# isrcheck native kernel, format {FORMAT}: generated by model/native.py, do not edit",
           "import numpy as np", "from numba import njit, types as T", "", ""]


def action_source(layout, guard, writes):
    """The module of one action instance's loop, ``kernel``: ``writes`` is [(column, node or constant)].

    ``kernel(B, fps, M, row, pos, out_rows, out_fps, out_vals, enabled, fired, k)`` goes on from row ``row``
    writing successors from output position ``pos``, and counts into ``enabled[k]`` and ``fired[k]``; it
    returns (the row it got to, the next output position): the row is ``n`` unless the outputs filled up.
    """
    e = _Emitter(layout, "t")
    lines = _HEADER + [
        "@njit(T.UniTuple(T.int64, 2)(T.int8[:, ::1], T.uint64[::1], T.uint64[::1], T.int64, T.int64, "
        "T.int64[::1], T.uint64[::1], T.int8[:, ::1], T.int64[::1], T.int64[::1], T.int64), cache=True, nogil=True)",
        "def kernel(B, fps, M, row, pos, out_rows, out_fps, out_vals, enabled, fired, k):",
        "    n = B.shape[1]",
        "    cap = out_rows.shape[0]",
        "    for r in range(row, n):",
        "        if pos >= cap:",
        "            return r, pos"]
    g = e.emit(guard, lines, " " * 8)
    if g == "False":
        return "\n".join(lines + ["    return n, pos"]) + "\n"
    lines += [f"        if {g if e.is_bool(guard) else f'({g}) != 0'}:",
              "            enabled[k] += 1",
              "            h = fps[r]"]
    for j, (c, v) in enumerate(writes):
        e.emit(v, lines, " " * 12)
        lines += [f"            w{j} = np.int8({e.as_int8(v)})",
                  f"            h += np.uint64(np.int64(w{j}) - np.int64(B[{c}, r])) * M[{c}]"]
    lines += ["            if h != fps[r]:",
              "                out_rows[pos] = r",
              "                out_fps[pos] = h"]
    lines += [f"                out_vals[{j}, pos] = w{j}" for j in range(len(writes))]
    lines += ["                fired[k] += 1",
              "                pos += 1",
              "    return n, pos"]
    return "\n".join(lines) + "\n"


def invariant_source(layout, value):
    """The module of one invariant's loop, ``kernel(B, out)``: out[r] = whether it holds in row r."""
    e = _Emitter(layout, "t")
    lines = _HEADER + ["@njit(T.void(T.int8[:, ::1], T.boolean[::1]), cache=True, nogil=True)",
                       "def kernel(B, out):", "    for r in range(B.shape[1]):"]
    v = e.emit(value, lines, " " * 8)
    lines.append(f"        out[r] = {v if e.is_bool(value) else f'({v}) != 0'}")
    return "\n".join(lines) + "\n"


def load(source):
    """The function ``kernel`` of generated source, imported from the cache directory (where the source is
    written once, under its hash, and numba keeps the compiled code next to it). One module per kernel: specs
    that share an action or an invariant share its compiled code."""
    name = f"isrcheck_native_{_key(source)}"
    if name in sys.modules:
        return sys.modules[name].kernel
    path = os.path.join(cache_dir(), name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module              # before running it: numba's cached code refers to it by name
    try:
        with _compiling(path):              # compiles the function (or loads it from numba's cache)
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    if not os.path.exists(path + ".ok"):
        with open(path + ".ok", "w"):
            pass
    return module.kernel


@contextlib.contextmanager
def _compiling(path):
    """Held while a kernel not yet compiled is imported: a second process needing the same kernel waits for
    the first to compile it, then loads it from numba's cache, instead of compiling it again alongside."""
    if fcntl is None or os.path.exists(path + ".ok"):
        yield
        return
    try:
        fh = open(path + ".lock", "a")
    except OSError:                         # a read-only cache: compile without the lock
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def compiled(source):
    """Whether ``load(source)`` will find its kernel compiled (in this process or in the cache)."""
    name = f"isrcheck_native_{_key(source)}"
    return name in sys.modules or os.path.exists(os.path.join(cache_dir(), name + ".py.ok"))


def _key(source):
    return hashlib.sha256(source.encode()).hexdigest()[:24]


class Native:
    """A spec's actions and invariants as native kernels: traced on creation, compiled (or loaded from the
    cache) by ``load``, which the first ``expand`` or ``holds`` calls; ``compiled`` tells whether that is cheap.

    ``expand(batch, fps, multipliers)`` -> (per action instance that moved: (id, rows, {column: new values},
    fingerprints), enabled count per instance, fired count per instance).
    ``holds(inv, batch)`` -> the invariant as a bool vector.
    """

    def __init__(self, layout, actions, invariants):
        """``actions``: per instance, its traced (guard, {column: new value}); ``invariants``: {name: value}."""
        self.columns, sources = [], []      # per instance, the columns it writes (x' = x left out: no cell moves)
        for guard, written in actions:
            writes = [(c, v) for c, v in written.items()
                      if not (isinstance(v, Node) and v.op == "col" and v.args[0] == c)]
            sources.append(action_source(layout, guard, writes))
            self.columns.append([c for c, _ in writes])
        self.names = list(invariants)
        self.sources = sources + [invariant_source(layout, v) for v in invariants.values()]
        self.width = max([len(c) for c in self.columns] + [1])
        self._acts = None

    @property
    def compiled(self):
        return self._acts is not None or all(compiled(s) for s in self.sources)

    def load(self):
        if self._acts is None:
            kernels = [load(s) for s in self.sources]
            self._invariants = dict(zip(self.names, kernels[len(self.columns):]))
            self._acts = kernels[:len(self.columns)]
        return self

    def expand(self, batch, fps, multipliers):
        self.load()
        batch = np.ascontiguousarray(batch)
        n = batch.shape[1]
        enabled = np.zeros(len(self.columns), dtype=np.int64)
        fired = np.zeros(len(self.columns), dtype=np.int64)
        cap = max(1024, 2 * n)
        out = self._buffers(cap)
        pos, parts = 0, []
        for k, act in enumerate(self._acts):
            row, pieces = 0, []
            while True:
                first = pos
                row, pos = act(batch, fps, multipliers, row, pos, *out, enabled, fired, k)
                if pos > first:
                    pieces.append((out[0][first:pos], out[1][first:pos], out[2][:, first:pos]))
                if row >= n:
                    break
                cap *= 2                    # outputs full: go on in a new, larger buffer
                out, pos = self._buffers(cap), 0
            if pieces:
                rows, h, vals = pieces[0] if len(pieces) == 1 else (
                    np.concatenate(x, axis=-1) for x in zip(*pieces))
                parts.append((k, rows, {c: vals[j] for j, c in enumerate(self.columns[k])}, h))
        return parts, enabled, fired

    def apply(self, k, batch, fps, multipliers):
        """Action instance ``k``'s successor of every column of ``batch``, each one it is enabled on and moves (as
        ``expand`` found): (their fingerprints, {column: new values})."""
        self.load()
        n = batch.shape[1]
        out = self._buffers(n)
        counts = np.zeros(len(self.columns), dtype=np.int64)
        _, pos = self._acts[k](np.ascontiguousarray(batch), fps, multipliers, 0, 0, *out, counts, counts.copy(), k)
        if pos != n:
            raise RuntimeError(f"internal error: action instance {k} does not move {n - pos} of its parents")
        return out[1][:n], {c: out[2][j, :n] for j, c in enumerate(self.columns[k])}

    def _buffers(self, cap):
        return (np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.uint64),
                np.empty((self.width, cap), dtype=np.int8))

    def holds(self, inv, batch):
        self.load()
        out = np.empty(batch.shape[1], dtype=bool)
        self._invariants[inv.name](np.ascontiguousarray(batch), out)
        return out
