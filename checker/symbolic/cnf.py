"""One step of a spec as CNF, unrolled by renaming, for an incremental SAT solver (CaDiCaL, via python-sat).

Every term the spec's z3 backend produces is an Int/Bool term over the state columns; one step of it is
translated (once) into bit-vectors, exactly (:class:`BitBlaster`: the width is chosen by interval
analysis so that every integer subterm's value range fits, so on well-typed states the bit-vector term
has exactly the Int term's value); z3 bit-blasts it into CNF over named atoms -- a state column is its
fewest bits, an action choice is one-hot -- and :class:`CnfUnrolling` instantiates that CNF per step by
renaming variables. Every state on a path is well-typed: the initial state is, spec loading checks that
no enabled action writes a value outside its field's bounds, and the encoding also asserts the bounds.
Measured on hw-truncation no-committed-loss (violated at 12 states): 36 s CPU with z3's own
bit-blasting incremental solver on 6-bit columns, 10 s with this encoding on CaDiCaL. Used by bounded
model checking (checker/symbolic/bmc.py) and lemma learning (checker/symbolic/strengthen.py).
"""
from __future__ import annotations

import signal
import time

import numpy as np
import pysolvers
import z3

from isrcheck.checker.engine import stop
from isrcheck.checker.symbolic.unrolling import Stopped, Unrolling, Z3Unknown, replay_path, step_relation
from isrcheck.model import backends


class BitBlaster:
    """Translate Int/Bool z3 terms into bit-vector/Bool terms of one width, exactly.

    ``bounds`` maps each Int variable's name to (lo, hi). :meth:`fit` runs an
    interval analysis over the terms (a variable ranges over its bounds, a
    numeral is itself, ``+ - *`` and unary minus combine intervals, ``ite``
    takes the union of its branches) and picks the smallest two's-complement
    width in which every Int subterm's interval fits. Under assignments within
    the bounds, each translated subterm then denotes the same integer as the
    original (no arithmetic wraps), and signed comparisons agree with the Int
    ones, so the translation is equisatisfiable and models map back one to one.
    Any operator outside + - * unary- < <= > >= = distinct ite and or not
    implies xor is rejected.
    """

    def __init__(self, bounds):
        self.bounds = bounds
        self.width = None
        self._nodes = {}         # ast id -> (ast, child ids), every node seen
        self._interval = {}      # ast id -> (lo, hi), or None for a Bool node
        self._memo = {}          # ast id -> translation
        self.variables = {}      # name -> BitVec/Bool variable

    def _visit(self, root):
        """Every node under root not seen before, children first (each node's children read once)."""
        nodes, order, kids_of = self._nodes, [], {}
        stack = [(root, False)]
        while stack:
            x, expanded = stack.pop()
            key = x.get_id()
            if expanded:
                nodes[key] = (x, [c.get_id() for c in kids_of.pop(key)])
                order.append(key)
                continue
            if key in nodes:
                continue
            nodes[key] = None
            kids = x.children()
            kids_of[key] = kids
            stack.append((x, True))
            stack.extend((c, False) for c in kids if c.get_id() not in nodes)
        return order

    def _analyse(self, root):
        for key in self._visit(root):
            x, kids = self._nodes[key]
            self._interval[key] = self._interval_of(x, [self._interval[c] for c in kids])

    def fit(self, terms):
        """Choose the width for these terms (and any translated later must fit it too)."""
        for t in terms:
            self._analyse(t)
        worst = 1
        for iv in self._interval.values():
            if iv is not None:
                worst = max(worst, abs(iv[0]), abs(iv[1]) + 1)
        self.width = max(2, worst.bit_length() + 1)
        return self.width

    def _interval_of(self, x, kids):
        if not z3.is_int(x):
            return None
        k = x.decl().kind()
        if k == z3.Z3_OP_ANUM:
            v = x.as_long()
            return (v, v)
        if k == z3.Z3_OP_UNINTERPRETED:
            name = str(x)
            if name not in self.bounds:
                raise ValueError(f"no bounds for integer variable {name}")
            return self.bounds[name]
        if k == z3.Z3_OP_ADD:
            return (sum(i[0] for i in kids), sum(i[1] for i in kids))
        if k == z3.Z3_OP_SUB:
            lo, hi = kids[0]
            for a, b in kids[1:]:
                lo, hi = lo - b, hi - a
            return (lo, hi)
        if k == z3.Z3_OP_UMINUS:
            return (-kids[0][1], -kids[0][0])
        if k == z3.Z3_OP_MUL:
            lo, hi = kids[0]
            for a, b in kids[1:]:
                ps = [lo * a, lo * b, hi * a, hi * b]
                lo, hi = min(ps), max(ps)
            return (lo, hi)
        if k == z3.Z3_OP_ITE:
            return (min(kids[1][0], kids[2][0]), max(kids[1][1], kids[2][1]))
        raise ValueError(f"cannot translate {x.decl()} to bit-vectors")

    def __call__(self, term):
        if self.width is None:
            self.fit([term])
        else:
            self._analyse(term)
        limit = 1 << (self.width - 1)
        for key in self._topological(term):
            if key in self._memo:
                continue
            iv = self._interval[key]
            if iv is not None and not -limit <= iv[0] <= iv[1] < limit:
                raise ValueError(f"a term needs more than {self.width} bits")
            x, kids = self._nodes[key]
            self._memo[key] = self._build(x, [self._memo[c] for c in kids])
        return self._memo[term.get_id()]

    def _topological(self, root):
        """Node ids under root, children first (from the cached child lists)."""
        out, seen, stack = [], set(), [(root.get_id(), False)]
        while stack:
            key, expanded = stack.pop()
            if expanded:
                out.append(key)
                continue
            if key in seen or key in self._memo:
                continue
            seen.add(key)
            stack.append((key, True))
            stack.extend((c, False) for c in self._nodes[key][1] if c not in seen)
        return out

    def _build(self, x, a):
        k = x.decl().kind()
        w = self.width
        if k == z3.Z3_OP_ANUM:
            return z3.BitVecVal(x.as_long(), w)
        if k == z3.Z3_OP_TRUE:
            return z3.BoolVal(True)
        if k == z3.Z3_OP_FALSE:
            return z3.BoolVal(False)
        if k == z3.Z3_OP_UNINTERPRETED:
            name = str(x)
            v = z3.Bool(name) if z3.is_bool(x) else z3.BitVec(name, w)
            self.variables[name] = v
            return v
        if k in (z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_MUL):
            r = a[0]
            for y in a[1:]:
                r = r + y if k == z3.Z3_OP_ADD else r - y if k == z3.Z3_OP_SUB else r * y
            return r
        if k == z3.Z3_OP_UMINUS:
            return -a[0]
        if k == z3.Z3_OP_LE:
            return a[0] <= a[1]
        if k == z3.Z3_OP_LT:
            return a[0] < a[1]
        if k == z3.Z3_OP_GE:
            return a[0] >= a[1]
        if k == z3.Z3_OP_GT:
            return a[0] > a[1]
        if k == z3.Z3_OP_EQ:
            return a[0] == a[1]
        if k == z3.Z3_OP_DISTINCT:
            return z3.Distinct(*a)
        if k == z3.Z3_OP_ITE:
            return z3.If(a[0], a[1], a[2])
        if k == z3.Z3_OP_AND:
            return z3.And(a)
        if k == z3.Z3_OP_OR:
            return z3.Or(a)
        if k == z3.Z3_OP_NOT:
            return z3.Not(a[0])
        if k == z3.Z3_OP_IMPLIES:
            return z3.Implies(a[0], a[1])
        if k == z3.Z3_OP_XOR:
            return z3.Xor(a[0], a[1])
        raise ValueError(f"cannot translate {x.decl()} to bit-vectors")


def _unsigned(atoms):
    """The unsigned bit-vector whose bits, least significant first, are these Bool atoms."""
    bits = [z3.If(b, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)) for b in reversed(atoms)]
    return bits[0] if len(bits) == 1 else z3.Concat(*bits)


class CnfUnrolling:
    """The BMC unrolling as CNF, for an incremental SAT solver (CaDiCaL, through python-sat).

    A state is a vector of named Boolean atoms: a column with bounds lo..hi holds
    ``lo + sum_b 2^b x_b`` over the fewest bits that count hi - lo (a flag is one
    atom), so the type bound is a few clauses and no bit is wasted. The action
    choice is one-hot: an atom per action instance and step, exactly one true.
    One step, ``T(s, s')`` with ``s'`` well-typed, and each invariant's truth
    ``holds.I <=> I(s)`` are translated once: the spec's Int terms go to
    bit-vectors (:class:`BitBlaster`), each variable becomes its bit vector, and
    z3's bit-blaster and Tseitin transformation give CNF over the named atoms and
    fresh ones. Step i is that CNF with the atoms of ``s``, ``s'`` and the choice
    renamed to the SAT variables of state i, state i+1 and step i, and every
    fresh atom to a new variable: one bit-blast, however deep the unrolling.
    """

    def __init__(self, spec, invariants):
        self.spec = spec
        lay = spec.layout
        self.bits = [1 if lay.boolean[c] else max(1, int(lay.hi[c] - lay.lo[c]).bit_length())
                     for c in range(lay.width)]
        self.start = np.concatenate([[0], np.cumsum(self.bits)])      # column c: state bits start[c]..start[c+1]
        tpl = Unrolling(spec, prefix="tpl")
        v0, v1 = tpl.state(0), tpl.state(1)
        bounds = {str(x): (int(lay.lo[c]), int(lay.hi[c]))
                  for vs in (v0, v1) for c, x in enumerate(vs) if not lay.boolean[c]}
        chosen = [z3.Bool(f"act.{k}") for k in range(len(spec.actions))]
        step = z3.And(step_relation(spec, v0, v1, chosen.__getitem__))
        holds = z3.And([z3.Bool(f"holds.{inv.name}") == tpl.holds(inv, 0) for inv in invariants])
        self.bb = BitBlaster(bounds)
        self.width = self.bb.fit([step, holds])
        atoms, by_name = {}, {}        # template atom name -> ("s0"|"s1", state bit) / ("act", k) / ("holds", name)
        for which, vs in (("s0", v0), ("s1", v1)):
            for c, x in enumerate(vs):
                names = [str(x)] if lay.boolean[c] else [f"{x}#{b}" for b in range(self.bits[c])]
                for b, n in enumerate(names):
                    atoms[n] = (which, int(self.start[c]) + b)
                by_name[str(x)] = [z3.Bool(n) for n in names]
        atoms.update({f"act.{k}": ("act", k) for k in range(len(chosen))})
        atoms.update({f"holds.{inv.name}": ("holds", inv.name) for inv in invariants})
        self._atoms = atoms
        typed = [z3.ULE(_unsigned(by_name[str(x)]), int(lay.hi[c] - lay.lo[c]))
                 for c, x in enumerate(v1) if not lay.boolean[c] and lay.hi[c] - lay.lo[c] < (1 << self.bits[c]) - 1]
        self._step = self._cnf(z3.And([self._bits_for(self.bb(step), by_name, bounds)] + typed))
        self._holds = self._cnf(self._bits_for(self.bb(holds), by_name, bounds))
        missing = {f"holds.{inv.name}" for inv in invariants} - {f"holds.{r[1]}" for r in self._holds[1] if r and r[0] == "holds"}
        if missing:
            raise RuntimeError(f"internal error: no CNF variable for {', '.join(sorted(missing))}")
        self.n_vars = 0
        self.states, self.choices = [], []

    # --- translation ------------------------------------------------------------------------
    def _bits_for(self, bv_term, by_name, bounds):
        """The bit-vector term with each state variable replaced by its atoms' value."""
        pairs = []
        for name, var in self.bb.variables.items():
            if name not in by_name or z3.is_bool(var):
                continue
            raw = _unsigned(by_name[name])
            value = z3.ZeroExt(self.width - raw.size(), raw) if raw.size() < self.width else raw
            pairs.append((var, value + bounds[name][0]))
        return z3.substitute(bv_term, *pairs)

    def _cnf(self, formula):
        """(clauses as one 0-separated int array, template variable -> role) of a formula over the atoms."""
        goal = z3.Goal()
        goal.add(formula)
        (out,) = z3.Then("simplify", "bit-blast", "aig", "tseitin-cnf")(goal)
        lines = out.dimacs(include_names=True).splitlines()
        n_vars = int(lines[0].split()[2])
        roles = [None] * (n_vars + 1)
        body = []
        for line in lines[1:]:
            if line.startswith("c "):
                _, v, name = line.split(" ", 2)
                roles[int(v)] = self._atoms.get(name)
            else:
                body.append(line)
        lits = np.array(" ".join(body).split(), dtype=np.int64)
        return lits, roles

    # --- SAT variables ---------------------------------------------------------------------
    def new_variables(self, n):
        """n fresh SAT variables."""
        first = self.n_vars + 1
        self.n_vars += n
        return np.arange(first, first + n, dtype=np.int64)

    def state(self, i):
        """SAT variables of state i's bits (column c: ``start[c]`` to ``start[c + 1]``, least significant first)."""
        while len(self.states) <= i:
            self.states.append(self.new_variables(int(self.start[-1])))
        return self.states[i]

    def choice(self, i):
        while len(self.choices) <= i:
            self.choices.append(self.new_variables(len(self.spec.actions)))
        return self.choices[i]

    def _instantiate(self, template, i, with_next):
        lits, roles = template
        where = np.empty(len(roles), dtype=np.int64)
        fresh = [v for v in range(1, len(roles)) if roles[v] is None]
        where[fresh] = self.new_variables(len(fresh))
        named = {}
        for v, role in enumerate(roles):
            if role is None or v == 0:
                continue
            kind, key = role
            if kind == "s0":
                where[v] = self.state(i)[key]
            elif kind == "s1" and with_next:
                where[v] = self.state(i + 1)[key]
            elif kind == "act" and with_next:
                where[v] = self.choice(i)[key]
            elif kind == "holds":
                where[v] = named[key] = self.new_variables(1)[0]
            else:
                raise RuntimeError(f"internal error: atom {kind} {key} in the wrong template")
        mapped = np.where(lits > 0, where[np.abs(lits)], -where[np.abs(lits)])
        mapped[lits == 0] = 0
        cuts = np.flatnonzero(mapped == 0)
        clauses = [c.tolist() for c in np.split(mapped, cuts + 1)[:-1]]
        return [c[:-1] for c in clauses], named

    # --- clauses ---------------------------------------------------------------------------
    def literals(self, i, cells):
        """SAT literals, all true exactly when state i has these (column, value) pairs: one per bit."""
        lay, s = self.spec.layout, self.state(i)
        out = []
        for c, v in cells:
            raw = int(v) - (0 if lay.boolean[c] else int(lay.lo[c]))
            for b in range(self.bits[c]):
                x = int(s[self.start[c] + b])
                out.append(x if (raw >> b) & 1 else -x)
        return out

    def initial(self):
        """Unit clauses: state 0 is the spec's initial state."""
        return [[x] for x in self.literals(0, enumerate(backends.scalar(self.spec).initial_row()))]

    def typed(self, i):
        """Clauses: every column of state i within its bounds (x <= hi - lo, over its bits).

        x > r iff, at the highest bit where they differ, x has 1 and r has 0; so per
        bit b with r_b = 0: not (x_b and x_j for every higher j with r_j = 1).
        """
        lay, s = self.spec.layout, self.state(i)
        out = []
        for c in range(lay.width):
            if lay.boolean[c]:
                continue
            r, x = int(lay.hi[c] - lay.lo[c]), [int(v) for v in s[self.start[c]:self.start[c + 1]]]
            out.extend([-x[b]] + [-x[j] for j in range(b + 1, len(x)) if (r >> j) & 1]
                       for b in range(len(x)) if not (r >> b) & 1)
        return out

    def transition(self, i):
        """Clauses of T(s_i, s_{i+1}) with s_{i+1} well-typed, and exactly one action chosen at step i."""
        clauses, _ = self._instantiate(self._step, i, with_next=True)
        acts = self.choice(i).tolist()
        clauses.append(acts)
        clauses.extend([-a, -b] for j, a in enumerate(acts) for b in acts[j + 1:])
        return clauses

    def holds(self, i):
        """(clauses, {invariant: SAT variable true iff it holds at state i})."""
        return self._instantiate(self._holds, i, with_next=False)

    # --- decoding --------------------------------------------------------------------------
    def model(self, solver):
        """The solver's model as one literal per variable allocated here (unassigned ones false)."""
        model = -np.arange(1, self.n_vars + 1, dtype=np.int64)
        found = np.asarray(solver.get_model(), dtype=np.int64)
        model[np.abs(found) - 1] = found
        return model

    def values(self, model, i):
        """State i of a SAT model (one literal per variable, in order) as a list of ints."""
        true = model > 0
        lay, s = self.spec.layout, self.state(i)
        out = []
        for c in range(lay.width):
            bits = true[s[self.start[c]:self.start[c + 1]] - 1]
            raw = int(np.dot(bits, 1 << np.arange(self.bits[c])))
            out.append(raw if lay.boolean[c] else raw + int(lay.lo[c]))
        return out

    def replay(self, model, n_states):
        """The path in a SAT model, replayed on the scalar backend (see :func:`replay_path`)."""
        model = np.asarray(model, dtype=np.int64)
        ids = [int(np.flatnonzero(model[self.choice(i) - 1] > 0)[0]) for i in range(n_states - 1)]
        return replay_path(self.spec, lambda i: self.values(model, i), ids, n_states)


#: address space kept free under a limit (ulimit -v) while CaDiCaL grows: an allocation it cannot make aborts the
#: process (C++ std::bad_alloc), so the solving stops before, like at any budget
SOLVER_RESERVE = 64 << 20


def room_check():
    """Stopped when an address-space limit leaves CaDiCaL less than SOLVER_RESERVE to grow into."""
    room = stop.address_space_room()
    if room is not None and room < SOLVER_RESERVE:
        raise Stopped(f"address-space limit (ulimit -v), {max(room, 0) >> 20} MB left")


def sat_check(solver, assumptions, deadline):
    """Satisfiable under the assumptions? Raises Z3Unknown when the deadline passes first.

    CaDiCaL cannot be interrupted from another thread, so it runs in slices of
    1,000 conflicts (a fraction of a second each; measured to cost nothing, the
    solver keeps its state between slices), and the clock and Ctrl-C are
    checked between them.
    """
    while True:
        if deadline is not None and time.perf_counter() >= deadline:
            raise Z3Unknown("time limit reached")
        if stop.reason():
            raise Stopped(stop.reason())
        room_check()
        solver.conf_budget(1000)
        try:
            answer = solver.solve_limited(assumptions=assumptions, expect_interrupt=True)
        except pysolvers.error as e:    # CaDiCaL's solve takes SIGINT from the main thread while it runs
            if "keyboard interrupt" not in str(e):
                raise
            stop.caught(signal.SIGINT)
            raise Stopped(stop.reason()) from None
        if answer is not None:
            return answer
