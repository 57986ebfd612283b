"""Batch kernels: an action or invariant traced once into an expression graph, emitted as numpy code.

Running spec code through the View for every batch costs Python time per call;
tracing it once on :class:`Node` values (the same operators and helpers as the
other backends) gives a graph with common subexpressions shared and constants
folded. ``kernel`` turns the graph into one straight-line Python function over
numpy columns, which the numpy backend of ``Spec`` calls for every batch.
"""
from __future__ import annotations

import numpy as np

from isrcheck.model.expr import DeclarationError, Traced

_BINARY = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
           "ne": "!=", "and": "&", "or": "|"}
_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
         "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
         "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
         "and": lambda a, b: bool(a) & bool(b), "or": lambda a, b: bool(a) | bool(b),
         "min": min, "max": max}


class Graph:
    """Hash-consed nodes: building the same expression twice returns the same node."""

    def __init__(self):
        self.nodes = {}

    def node(self, op, *args):
        key = (op,) + tuple(("n", a.id) if isinstance(a, Node) else ("c", type(a).__name__, a) for a in args)
        found = self.nodes.get(key)
        if found is None:
            found = Node(self, len(self.nodes), op, args)
            self.nodes[key] = found
        return found

    def reader(self, layout):
        return lambda c: self.node("col", c, bool(layout.boolean[c]))


def _const(v):
    return not isinstance(v, Node)


def _plain(v):
    """A folded constant as a plain Python int or bool."""
    return bool(v) if isinstance(v, (bool, np.bool_)) else int(v)


class Node(Traced):
    __slots__ = ("graph", "id", "op", "args")

    def __init__(self, graph, id, op, args):
        self.graph, self.id, self.op, self.args = graph, id, op, args

    __hash__ = None

    def __bool__(self):
        raise DeclarationError(
            "Python `if`/`and`/`or`/`not` used on a state value; use where(), &, |, ~ instead")

    def __index__(self):
        raise DeclarationError("a state value used as a Python index; index the field itself")

    # --- construction with folding and simplification --------------------------------------
    @staticmethod
    def make(op, a, b):
        if _const(a) and _const(b):
            return _plain(_FOLD[op](_plain(a), _plain(b)))
        if op in ("and", "or"):
            zero = op == "or"                            # the absorbing constant
            for x, y in ((a, b), (b, a)):
                if _const(x):
                    return zero if bool(x) == zero else y
            if a is b:
                return a
        if op in ("eq", "le", "ge") and a is b:
            return True
        if op in ("ne", "lt", "gt") and a is b:
            return False
        graph = (a if isinstance(a, Node) else b).graph
        if op in ("add", "mul", "eq", "ne", "and", "or", "min", "max") and isinstance(a, Node) \
                and isinstance(b, Node) and b.id < a.id:
            a, b = b, a                                  # commutative: one canonical order
        return graph.node(op, a, b)

    @classmethod
    def where(cls, cond, then, otherwise):
        if _const(cond):
            return then if bool(cond) else otherwise
        if then is otherwise or (_const(then) and _const(otherwise) and then == otherwise
                                 and type(then) is type(otherwise)):
            return then
        return cond.graph.node("where", cond, then, otherwise)

    @classmethod
    def minimum(cls, a, b):
        return cls.make("min", a, b)

    @classmethod
    def maximum(cls, a, b):
        return cls.make("max", a, b)

    def __add__(self, o): return Node.make("add", self, o)
    def __radd__(self, o): return Node.make("add", o, self)
    def __sub__(self, o): return Node.make("sub", self, o)
    def __rsub__(self, o): return Node.make("sub", o, self)
    def __mul__(self, o): return Node.make("mul", self, o)
    def __rmul__(self, o): return Node.make("mul", o, self)
    def __neg__(self): return Node.make("sub", 0, self)
    def __lt__(self, o): return Node.make("lt", self, o)
    def __le__(self, o): return Node.make("le", self, o)
    def __gt__(self, o): return Node.make("gt", self, o)
    def __ge__(self, o): return Node.make("ge", self, o)
    def __eq__(self, o): return Node.make("eq", self, o)
    def __ne__(self, o): return Node.make("ne", self, o)
    def __and__(self, o): return Node.make("and", self, o)
    __rand__ = __and__
    def __or__(self, o): return Node.make("or", self, o)
    __ror__ = __or__

    def __invert__(self):
        if self.op == "not":
            return self.args[0]
        return self.graph.node("not", self)


def _children_first(root, done):
    """The nodes below ``root`` not in ``done``, each after its arguments (iteratively: graphs can be deep).

    The caller adds each node it gets to ``done`` before asking for the next.
    """
    stack = [(root, False)]
    while stack:
        v, ready = stack.pop()
        if _const(v) or v.id in done:
            continue
        if ready:
            yield v
        else:
            stack.append((v, True))
            stack.extend((x, False) for x in v.args if isinstance(x, Node))


def kernel_code(outputs, subset):
    """The compiled code of ``f(batch[, rows]) -> [value per output]``, evaluating traced outputs with numpy
    (``kernel`` makes it a function; model/kernel_cache.py keeps it across processes).

    Columns are read from the column-major batch (gathered at ``rows`` when
    ``subset``); an output that folded to a constant is returned as that constant.
    """
    lines, names = [], {}

    def ref(v):
        return repr(_plain(v)) if _const(v) else names[v.id]

    def define(v):
        if v.op == "col":
            c, boolean = v.args
            src = f"B[{c}][rows]" if subset else f"B[{c}]"
            return f"{src}.view(bool_)" if boolean else src
        a = [ref(x) for x in v.args]
        if v.op in _BINARY:
            return f"({a[0]} {_BINARY[v.op]} {a[1]})"
        if v.op == "not":
            return f"(~{a[0]})"
        if v.op == "where":      # small integer constants as int8, so int8 columns stay int8
            b = [f"i8({x})" if _const(y) and type(_plain(y)) is int and -128 <= y <= 127 else x
                 for x, y in zip(a[1:], v.args[1:])]
            return f"where({a[0]}, {b[0]}, {b[1]})"
        return f"{'minimum' if v.op == 'min' else 'maximum'}({a[0]}, {a[1]})"

    dying = {}          # line -> the temporaries last read there

    def emit(root):
        for v in _children_first(root, names):
            names[v.id] = f"t{v.id}"
            for x in v.args:
                if not _const(x):
                    dying[x.id] = len(lines)
            lines.append(f"    t{v.id} = {define(v)}")
        return ref(root)

    results = [emit(v) for v in outputs]
    # each temporary is a vector as long as the batch: dropped after its last read (the guards' kernel has
    # hundreds), outputs excepted
    kept = {v.id for v in outputs if not _const(v)}
    drops = {}
    for node, line in dying.items():
        if node not in kept:
            drops.setdefault(line, []).append(f"t{node}")
    body = [f"{text}\n    del {', '.join(drops[k])}" if k in drops else text for k, text in enumerate(lines)]
    source = "def kernel(B, rows=None):\n" + "\n".join(body) + f"\n    return [{', '.join(results)}]\n"
    return compile(source, "<isrcheck kernel>", "exec")


def kernel(code):
    """The numpy function a ``kernel_code`` defines."""
    scope = {"where": np.where, "minimum": np.minimum, "maximum": np.maximum, "bool_": np.bool_, "i8": np.int8}
    exec(code, scope)
    return scope["kernel"]


_PY_BINARY = {**_BINARY, "and": "and", "or": "or"}


def _is_int(v, depth=0):
    """Whether the Python code for v surely yields an int (cells and constants do; comparisons give bools)."""
    if _const(v) or v.op == "col":
        return True
    if depth > 20:
        return False
    if v.op == "where":
        return _is_int(v.args[1], depth + 1) and _is_int(v.args[2], depth + 1)
    return v.op in ("and", "or", "add", "sub", "mul", "min", "max") and all(_is_int(x, depth + 1) for x in v.args)


def tuple_kernel(outputs, kind, columns=(), booleans=(), labels=None):
    """One-state Python code from traced outputs: a function of a state given as a tuple of ints.

    The numpy ``kernel`` evaluates a graph over a whole batch; this evaluates it
    for one state with plain Python ints and bools (``and``/``or``/``not``, ``x if
    c else y``), which is what a random walk needs. Nodes used more than once
    become temporaries, unless they only combine cells and constants (recomputing
    those costs no more than naming them, and guards that fail early never pay
    for them); so do nodes nested too deep for one expression. The rest is inlined.
    ``kind`` is what the function returns:

    - ``"which"``: the indices of the outputs that hold (guards -> enabled instances), or their ``labels``;
    - ``"update"``: the state with ``columns[k]`` set to output ``k`` (as an int; 0/1
      for the columns flagged in ``booleans``);
    - ``"value"``: ``bool`` of the single output (an invariant).
    """
    uses = {}
    stack = [v for v in outputs if not _const(v)]
    while stack:
        v = stack.pop()
        uses[v.id] = uses.get(v.id, 0) + 1
        if uses[v.id] == 1:
            stack.extend(x for x in v.args if isinstance(x, Node))
    lines, text = [], {}           # node id -> (expression text, nesting depth)

    def ref(v):
        if _const(v):
            return str(int(_plain(v))), 0           # booleans as 0/1, like the state's cells
        return text[v.id]

    def define(v):
        if v.op == "col":
            return f"r[{v.args[0]}]", 0
        a = [ref(x) for x in v.args]
        depth = 1 + max(d for _, d in a)
        s = [t for t, _ in a]
        if v.op in _PY_BINARY:
            return f"({s[0]} {_PY_BINARY[v.op]} {s[1]})", depth
        if v.op == "not":
            return f"(not {s[0]})", depth
        if v.op == "where":
            return f"({s[1]} if {s[0]} else {s[2]})", depth
        return f"{v.op}({s[0]}, {s[1]})", depth

    def emit(root):
        for v in _children_first(root, text):
            t, depth = define(v)
            cheap = all(_const(x) or x.op == "col" for x in v.args)   # as cheap to recompute as to name
            if v.op != "col" and ((uses[v.id] > 1 and not cheap) or depth > 40):
                lines.append(f"    t{v.id} = {t}")
                t, depth = f"t{v.id}", 0
            text[v.id] = (t, depth)
        return ref(root)[0]

    results = [emit(v) for v in outputs]
    if kind == "which":
        names = range(len(results)) if labels is None else labels
        body = ["    out = []"] + [f"    if {t}: out.append({k})" for k, t in zip(names, results) if t != "0"]
        body.append("    return out")
    elif kind == "update":
        writes = [(c, t if c not in booleans or _is_int(v) else f"int({t})")
                  for c, v, t in sorted(zip(columns, outputs, results), key=lambda w: w[0])
                  if not (isinstance(v, Node) and v.op == "col" and v.args[0] == c)]
        if len(writes) > 3:
            body = ["    n = list(r)"] + [f"    n[{c}] = {t}" for c, t in writes] + ["    return tuple(n)"]
        else:
            parts, start = [], 0
            for c, t in writes:
                parts += ([f"r[{start}:{c}]"] if c > start else []) + [f"({t},)"]
                start = c + 1
            body = [f"    return {' + '.join(parts + [f'r[{start}:]'])}"]
    elif kind == "value":
        body = [f"    return bool({results[0]})"]
    else:
        raise ValueError(f"unknown tuple kernel kind {kind!r}")
    source = "def kernel(r):\n" + "\n".join(lines + body) + "\n"
    scope = {}
    exec(compile(source, "<isrcheck tuple kernel>", "exec"), scope)
    return scope["kernel"]
