"""Backend conformance: scalar, numpy and z3 give identical guards, updates and invariants; so do the native
(numba) and compiled (C) kernels the exhaustive search runs (compared with numpy's results: enabled counts, moves,
successors, fingerprints).

For every spec in ``specs.SPECS`` at its default bounds, kip-320 at
replicas=3, and kip-320 with its proof ghosts on, a fixed-seed sample of well-typed states is run through all three
backends:

- half drawn uniformly from each column's [lo, hi] (boolean columns 0/1), so
  the actions meet states no run would reach (guards mostly false);
- half reached by random walks from ``backends.scalar(spec).initial_row()`` on the scalar
  backend (``Spec.step``), so the guards are often true and the updates run.

For each action instance the scalar guard (``Spec.run`` on a scalar View), the
numpy guard (``backends.batch(spec).guard`` over the whole sample at once) and the z3
guard (the ``backends.symbolic(spec).action`` term with the state's values substituted and
simplified) must agree; where the action is enabled every written column's new
value must agree (scalar ``View._written``, numpy ``update(...)._written``,
z3 written terms substituted and simplified). Every invariant must agree too.

Cost: the scalar backend takes ~2.4 ms per state for a two-replica spec and
~10 ms at replicas=3, three quarters of the fixture's time; z3 substitution is done once per state on a
single term that packs every guard, written value and invariant of the spec as the
arguments of one uninterpreted function (``z3.simplify`` then reduces each
argument to a literal), which is ~30x faster than substituting term by term,
but still ~6 ms per state (~10 ms at replicas=3). Over thirty configurations that is two to three minutes
of CPU, so the sample is 250 random states (whose guards are mostly false) and 400 walked ones, and z3 checks
every 4th state of it (163 per configuration: about 60 random, 100 walked); scalar and numpy check all of it.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import z3

from isrcheck.checker.exhaustive.fingerprint import Fingerprint
from isrcheck.model.expr import DeclarationError, where
from isrcheck.model.layout import Field
from isrcheck.model.spec import Spec, action, invariant
from isrcheck.model.view import View, scalar_reader, z3_variables
from isrcheck.specs import SPECS
from isrcheck.specs.kip_320 import Kip320
from isrcheck.model import backends

pytestmark = pytest.mark.long      # two minutes of CPU over every spec: out of the fast local subset

SEED = 20240611
RANDOM_STATES = 250
WALK_STATES = 400
WALK_MAX_LEN = 40
Z3_EVERY = 4            # z3 on every 4th state (see the module docstring)

# every spec at its default bounds (the TLA+ family, whose defaults are TLC's 3 replicas, at 2 to keep CI
# fast: its actions and invariants are the same code at any replica count), kip-320 at 3 replicas, and
# kip-320 with the proof ghosts (their updates and the lemmas' history parts) on, and the KRaft family with a
# reassignment that removes one of three replicas (kafka-3.9, and kafka-4.0 with ELR: every broker starts a replica,
# so the walks reach every election)
CONFIGS = ([(name, {"replicas": 2} if name.startswith("tla-") else {}) for name in SPECS]
           + [("kip-320", {"replicas": 3}), ("kip-320", {"proof_ghosts": 1}),
              ("kafka-3.9", {"replicas": 3, "reassignments": 1, "reassign_add": 0}),
              ("kafka-4.0", {"replicas": 3, "reassignments": 1, "reassign_add": 0})])




def config_id(config):
    name, bounds = config
    return name + "".join(f"-{k}={v}" for k, v in bounds.items())


#: the native kernels compile at about a second of CPU each (once per machine, then cached), 30-60 s a
#: configuration: the suite compares them on one configuration per model family, kip-101 for the ZooKeeper-era
#: one because tests/test_workers.py loads its kernels too (a lock makes the second wait for the first's
#: compile); ISRCHECK_NATIVE_CONFORMANCE=all compares every configuration
NATIVE_CONFIGS = [c for c in CONFIGS if os.environ.get("ISRCHECK_NATIVE_CONFORMANCE") == "all"
                  or config_id(c) in ("kip-101", "kafka-4.0", "tla-kip320-replicas=2")]


# ------------------------------------------------------------------------------------------
# the sample of states
# ------------------------------------------------------------------------------------------
def random_rows(spec, n, rng):
    """n rows drawn uniformly from each column's declared range."""
    lay = spec.layout
    return [rng.integers(lay.lo, lay.hi + 1).astype(np.int8) for _ in range(n)]


def walk_rows(spec, n, rng):
    """n distinct rows reached by random walks from the initial state (scalar backend)."""
    seen, out = set(), []
    actions, lay = spec.actions, spec.layout
    while len(out) < n:
        row = backends.scalar(spec).initial_row()
        for _ in range(int(rng.integers(1, WALK_MAX_LEN + 1))):
            for i in rng.permutation(len(actions)):
                # a guard-only scalar view is cheap; the scalar backend then takes the step
                if not backends.run_action(spec, actions[i], View(lay, scalar_reader(lay, row), guard_only=True)):
                    continue
                nxt = backends.scalar(spec).step(row, actions[i])
                assert nxt is not None, f"{spec.name}: {actions[i].label}: guard-only run and step disagree"
                break
            else:
                break               # nothing enabled: start a new walk
            row = nxt
            key = row.tobytes()
            if key not in seen:
                seen.add(key)
                out.append(row)
                if len(out) == n:
                    break
    return out


def targeted_rows(spec, rows):
    """For every action instance no sampled state enables, one well-typed state that does (a z3 model).

    Some instances are enabled only in unreachable states (e.g. a TLA+ leader adding itself to its own
    ISR); they still must be compared on at least one state.
    """
    batch = np.stack(rows, axis=1)
    variables = z3_variables(spec.layout)
    out, guards = [], backends.batch(spec).guards(batch)
    for a in spec.actions:
        if guards[a.id].any():
            continue
        solver = z3.Solver()
        solver.add(backends.symbolic(spec).type_ok(variables), backends.symbolic(spec).action(a, variables)[0])
        if solver.check() == z3.sat:
            model = solver.model()
            out.append(np.array([as_int(model.eval(v, model_completion=True)) if not z3.is_bool(v)
                                 else int(z3.is_true(model.eval(v, model_completion=True))) for v in variables],
                                dtype=np.int8))
    return out


def sample(spec, rng):
    """Uniformly random states, then states reached by random walks, then targeted ones (see above)."""
    rows = random_rows(spec, RANDOM_STATES, rng) + walk_rows(spec, WALK_STATES, rng)
    return rows + targeted_rows(spec, rows)


# ------------------------------------------------------------------------------------------
# the three backends, over a whole sample
# ------------------------------------------------------------------------------------------
def as_int(v):
    if isinstance(v, z3.IntNumRef):
        return v.as_long()
    return int(bool(v)) if isinstance(v, (bool, np.bool_)) else int(v)


def scalar_results(spec, rows):
    """guards[a][k], writes[a][k] ({column: int} where enabled), invariants[name][k]."""
    lay = spec.layout
    guards = np.zeros((len(spec.actions), len(rows)), dtype=bool)
    writes = [dict() for _ in spec.actions]
    invs = {name: np.zeros(len(rows), dtype=bool) for name in spec.invariants}
    for k, row in enumerate(rows):
        for a in spec.actions:
            # a guard-only view stops at the first write (cheap for the many disabled pairs) ...
            g = backends.run_action(spec, a, View(lay, scalar_reader(lay, row), guard_only=True))
            guards[a.id, k] = bool(g)
            if guards[a.id, k]:
                # ... and the full run must give the same guard along with the update.
                view = View(lay, scalar_reader(lay, row))
                g_full = backends.run_action(spec, a, view)
                assert bool(g_full) == bool(g), (
                    f"{spec.name}: action {a.label}: scalar guard differs between guard-only and full run "
                    f"in state {state_text(spec, row)}")
                writes[a.id][k] = {c: as_int(v) for c, v in view._written.items()}
        for name, inv in spec.invariants.items():
            invs[name][k] = backends.scalar(spec).holds(row, inv)
    return guards, writes, invs


def numpy_results(spec, rows):
    batch = np.ascontiguousarray(np.stack(rows, axis=1))
    guards = np.zeros((len(spec.actions), len(rows)), dtype=bool)
    writes, all_guards = [dict() for _ in spec.actions], backends.batch(spec).guards(batch)
    for a in spec.actions:
        g = np.asarray(all_guards[a.id], dtype=bool)
        assert g.shape == (len(rows),), f"{spec.name}: action {a.label}: numpy guard has shape {g.shape}"
        guards[a.id] = g
        enabled = np.flatnonzero(g)
        if enabled.size == 0:
            continue
        written = backends.batch(spec).update(a, batch, enabled)._written
        cols = {c: np.broadcast_to(np.asarray(v), enabled.shape) for c, v in written.items()}
        for j, k in enumerate(enabled):
            writes[a.id][int(k)] = {c: as_int(v[j]) for c, v in cols.items()}
    invs = {name: np.asarray(backends.batch(spec).holds(inv, batch), dtype=bool).copy()
            for name, inv in spec.invariants.items()}
    return guards, writes, invs


def native_mismatches(spec, rows, nu):
    """The native kernels (model/native.py) against numpy's results ``nu`` on the same rows: per instance the
    enabled count, the rows whose successor differs from the state, their new cells and fingerprints; and
    every invariant. A row's fingerprint here is its full one (checker/exhaustive/fingerprint.py), as in the search."""
    batch = np.ascontiguousarray(np.stack(rows, axis=1))
    fingerprint = Fingerprint(spec.layout)
    fps = fingerprint.full(batch)
    kernels = backends.native(spec)
    parts, enabled, _ = kernels.expand(batch, fps, fingerprint.multipliers)
    moved = {k: (r, cols, h) for k, r, cols, h in parts}
    names, bad = spec.layout.names, []
    for a in spec.actions:
        guards, writes = nu[0][a.id], nu[1][a.id]
        if enabled[a.id] != guards.sum():
            bad.append(f"{spec.name}: action {a.label}: native enabled on {enabled[a.id]} states, numpy on "
                       f"{guards.sum()}")
        expected = [k for k in np.flatnonzero(guards) if any(v != rows[k][c] for c, v in writes[k].items())]
        got, cols, h = moved.get(a.id, (np.empty(0, dtype=np.int64), {}, None))
        if list(got) != expected:
            bad.append(f"{spec.name}: action {a.label}: native moves from states {list(got)[:5]}..., numpy from "
                       f"{expected[:5]}...")
            continue
        for j, k in enumerate(got):
            succ = rows[k].copy()
            for c, v in writes[k].items():
                succ[c] = v
            new = {c: int(v[j]) for c, v in cols.items()}
            if any(succ[c] != v for c, v in new.items()) or h[j] != fingerprint.full(succ[:, None])[0]:
                bad.append(f"{spec.name}: action {a.label}: native successor differs from numpy's "
                           f"({ {names[c]: v for c, v in new.items()} }) in state {state_text(spec, rows[k])}")
    for name, inv in spec.invariants.items():
        got = kernels.holds(inv, batch)
        for k in np.flatnonzero(got != nu[2][name]):
            bad.append(f"{spec.name}: invariant {name}: native={bool(got[k])} numpy={bool(nu[2][name][k])} "
                       f"in state {state_text(spec, rows[k])}")
    return bad


def compiled_mismatches(spec, rows, nu):
    """The compiled kernels (model/c_kernels.py) against numpy's results ``nu`` on the same rows: per instance
    the enabled count and the rows whose successor differs from the state; in (row, instance) order every
    successor's two fingerprint lanes, and the row ``isr_build`` makes of it; every invariant, row by row."""
    from isrcheck.model.c_kernels import CKernels, Scratch
    batch = np.ascontiguousarray(np.stack(rows, axis=1))
    fingerprint = Fingerprint(spec.layout)
    fps, fps2 = fingerprint.full(batch), fingerprint.full(batch, lane=2)
    kernels = CKernels(spec).load()
    enabled, fired = (np.zeros(len(spec.actions), dtype=np.int64) for _ in range(2))
    h1, h2, parent, action = kernels.expand(batch, fps, fps2, fingerprint.multipliers, fingerprint.lane2,
                                            enabled, fired, Scratch())
    names, bad = spec.layout.names, []
    expected = []
    for k in range(len(rows)):
        for a in spec.actions:
            if nu[0][a.id, k] and any(v != rows[k][c] for c, v in nu[1][a.id][k].items()):
                expected.append((k, a.id))
    for a in spec.actions:
        if enabled[a.id] != nu[0][a.id].sum():
            bad.append(f"{spec.name}: action {a.label}: compiled enabled on {enabled[a.id]} states, numpy on "
                       f"{nu[0][a.id].sum()}")
    got = list(zip(parent.tolist(), action.tolist()))
    if got != expected:
        first = next((i for i, (x, y) in enumerate(zip(got, expected)) if x != y), min(len(got), len(expected)))
        return bad + [f"{spec.name}: compiled successors differ from numpy's from the {first}th: "
                      f"{got[first:first + 3]} against {expected[first:first + 3]}"]
    rows_out, lanes, p, a_out = kernels.build(batch, np.ones(h1.size, dtype=np.uint8), h1, h2, parent, action,
                                              h1.size)
    assert (lanes[0] == h1).all() and (lanes[1] == h2).all() and (p == parent).all() and (a_out == action).all()
    for j, (k, a) in enumerate(expected):
        succ = rows[k].copy()
        for c, v in nu[1][a][k].items():
            succ[c] = v
        label = spec.actions[a].label
        if (rows_out[:, j] != succ).any():
            bad.append(f"{spec.name}: action {label}: compiled successor differs from numpy's in state "
                       f"{state_text(spec, rows[k])}: cells {[names[c] for c in np.flatnonzero(rows_out[:, j] != succ)]}")
        elif (h1[j], h2[j]) != (fingerprint.full(succ[:, None])[0], fingerprint.full(succ[:, None], lane=2)[0]):
            bad.append(f"{spec.name}: action {label}: compiled fingerprint differs from the successor's")
    if (kernels.fingerprint(batch, fingerprint.lane2) != fps2).any():
        bad.append(f"{spec.name}: compiled fingerprints of whole rows differ from numpy's")
    for name in spec.invariants:
        for k in range(len(rows)):
            got = kernels.first_violation(name, batch[:, k:k + 1]) < 0
            if got != nu[2][name][k]:
                bad.append(f"{spec.name}: invariant {name}: compiled={got} numpy={bool(nu[2][name][k])} "
                           f"in state {state_text(spec, rows[k])}")
    return bad


class Z3Backend:
    """Every guard, written term and invariant of a spec, evaluated on concrete states by substitution."""

    def __init__(self, spec):
        self.spec = spec
        lay = spec.layout
        self.variables = z3_variables(lay)
        terms = []
        self.guard_at, self.write_at, self.inv_at = [], [], {}
        for a in spec.actions:
            guard, written = backends.symbolic(spec).action(a, self.variables)
            self.guard_at.append(len(terms))
            terms.append(guard)
            at = {}
            for c, t in written.items():
                at[c] = len(terms)
                terms.append(t)
            self.write_at.append(at)
        for name, inv in spec.invariants.items():
            self.inv_at[name] = len(terms)
            terms.append(backends.symbolic(spec).invariant(inv, self.variables))
        # One application of an uninterpreted function packs every term, so one substitute+simplify
        # evaluates them all; simplify rewrites each argument to a literal.
        pack = z3.Function(f"pack_{spec.name}", *[t.sort() for t in terms], z3.BoolSort())
        self.packed = pack(*terms)
        self.int_vals = {v: z3.IntVal(v) for v in range(int(lay.lo.min()), int(lay.hi.max()) + 1)}
        self.bool_vals = {False: z3.BoolVal(False), True: z3.BoolVal(True)}

    def evaluate(self, row):
        lay = self.spec.layout
        subst = [(var, self.bool_vals[bool(x)] if b else self.int_vals[int(x)])
                 for var, x, b in zip(self.variables, row, lay.boolean)]
        return z3.simplify(z3.substitute(self.packed, *subst))

    @staticmethod
    def boolean(app, i, what):
        t = app.arg(i)
        if z3.is_true(t):
            return True
        if z3.is_false(t):
            return False
        raise AssertionError(f"{what}: z3 term did not simplify to true/false but to {t}")

    def value(self, app, i, c, what):
        """The literal written to column c (0/1 for a boolean column)."""
        if self.spec.layout.boolean[c]:
            return int(self.boolean(app, i, what))
        t = app.arg(i)
        if z3.is_int_value(t):
            return t.as_long()
        raise AssertionError(f"{what}: z3 term did not simplify to an integer but to {t}")


def z3_results(spec, rows, need_writes, subset):
    """z3 values on the states ``subset`` (indices into rows); need_writes[a]: where a's writes are wanted."""
    z = Z3Backend(spec)
    guards, writes, invs = {}, [dict() for _ in spec.actions], {name: {} for name in spec.invariants}
    for k in subset:
        app = z.evaluate(rows[k])
        for a in spec.actions:
            guards[a.id, k] = z.boolean(app, z.guard_at[a.id], f"{spec.name}: guard of {a.label}")
            if k in need_writes[a.id]:
                writes[a.id][k] = {c: z.value(app, i, c, f"{spec.name}: {a.label} writing {spec.layout.names[c]}")
                                   for c, i in z.write_at[a.id].items()}
        for name, i in z.inv_at.items():
            invs[name][k] = z.boolean(app, i, f"{spec.name}: invariant {name}")
    return guards, writes, invs


# ------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------
def state_text(spec, row):
    """A state as its raw row and decoded field by field, for failure messages."""
    return f"row={[int(x) for x in row]} decoded={spec.layout.decode(row)}"


def compare(spec, rows, z3_subset=None):
    """Run the three backends over rows (z3 only on ``z3_subset``, default all): (mismatches, scalar results)."""
    z3_subset = range(len(rows)) if z3_subset is None else z3_subset
    sc = scalar_results(spec, rows)
    nu = numpy_results(spec, rows)
    need = [set(np.flatnonzero(sc[0][a.id] | nu[0][a.id]).tolist()) for a in spec.actions]
    zz = z3_results(spec, rows, need, z3_subset)
    names = spec.layout.names
    bad = {"guards": [], "updates": [], "invariants": []}
    for a in spec.actions:
        for k in range(len(rows)):
            gs, gn, gz = bool(sc[0][a.id, k]), bool(nu[0][a.id, k]), zz[0].get((a.id, k), "-")
            if gs != gn or gz not in ("-", gs):
                bad["guards"].append(f"{spec.name}: action {a.label}: guard scalar={gs} numpy={gn} z3={gz} "
                                     f"in state {state_text(spec, rows[k])}")
        for k in sorted(need[a.id]):
            ws, wn = sc[1][a.id].get(k), nu[1][a.id].get(k)
            if ws is None or wn is None:
                continue            # a guard mismatch, reported above
            wz = zz[1][a.id].get(k, {c: "-" for c in ws})
            if not set(ws) == set(wn) == set(wz):
                bad["updates"].append(
                    f"{spec.name}: action {a.label}: written columns differ: scalar {sorted(names[c] for c in ws)} "
                    f"numpy {sorted(names[c] for c in wn)} z3 {sorted(names[c] for c in wz)} "
                    f"in state {state_text(spec, rows[k])}")
                continue
            for c in sorted(ws):
                if ws[c] != wn[c] or wz[c] not in ("-", ws[c]):
                    bad["updates"].append(
                        f"{spec.name}: action {a.label}: column {names[c]}: scalar={ws[c]} numpy={wn[c]} "
                        f"z3={wz[c]} in state {state_text(spec, rows[k])}")
    for name in spec.invariants:
        for k in range(len(rows)):
            vs, vn, vz = bool(sc[2][name][k]), bool(nu[2][name][k]), zz[2][name].get(k, "-")
            if vs != vn or vz not in ("-", vs):
                bad["invariants"].append(f"{spec.name}: invariant {name}: scalar={vs} numpy={vn} z3={vz} "
                                         f"in state {state_text(spec, rows[k])}")
    return bad, sc, len(z3_subset)


def fail_text(messages, limit=3):
    more = f"\n... and {len(messages) - limit} more" if len(messages) > limit else ""
    return f"{len(messages)} disagreement(s):\n" + "\n".join(messages[:limit]) + more


# ------------------------------------------------------------------------------------------
# the tests, one sample per spec configuration (computed once, shared by the tests below)
# ------------------------------------------------------------------------------------------
def sample_rng(name, bounds):
    return np.random.default_rng([SEED, list(SPECS).index(name), len(bounds)])


@pytest.fixture(scope="module", params=CONFIGS, ids=config_id)
def run(request):
    name, bounds = request.param
    spec = SPECS[name](**bounds)
    rows = sample(spec, sample_rng(name, bounds))
    # z3 sees every Z3_EVERY-th state: as many random as walked ones (see the module docstring)
    bad, scalar, n_z3 = compare(spec, rows, range(0, len(rows), Z3_EVERY))
    return spec, rows, bad, scalar, n_z3


def test_conformance_sample_is_well_typed_and_exercises_every_action(run):
    spec, rows, _, (guards, _, invs), n_z3 = run
    lay = spec.layout
    assert len(rows) >= RANDOM_STATES + WALK_STATES and n_z3 >= (RANDOM_STATES + WALK_STATES) // Z3_EVERY
    walked = np.stack(rows[RANDOM_STATES:RANDOM_STATES + WALK_STATES], axis=1)
    assert walked.shape[1] == WALK_STATES
    # states reached by the scalar backend stay within every field's bounds
    out = (walked < lay.lo[:, None]) | (walked > lay.hi[:, None])
    assert not out.any(), (f"{spec.name}: a random walk left {lay.names[int(np.argwhere(out)[0][0])]}'s bounds "
                           f"in state {state_text(spec, walked[:, np.argwhere(out)[0][1]])}")
    # the walks really replicate: every election, request, produce and fetch instance fires on reached states
    core = [a.label for a in spec.actions if a.name in ("elect_leader", "apply_leader_and_isr", "produce", "fetch")
            and not guards[a.id, RANDOM_STATES:].any()]
    assert not core, f"{spec.name}: never enabled on a walked state: {core}"
    # every action instance (so every update) is compared on at least one state where it is enabled,
    # unless no well-typed state enables it at all (e.g. crash with max_crashes=0: crashes < 0)
    never = [a for a in spec.actions if not guards[a.id].any()]
    variables = z3_variables(lay)
    live = []
    for a in never:
        solver = z3.Solver()
        solver.add(backends.symbolic(spec).type_ok(variables), backends.symbolic(spec).action(a, variables)[0])
        if solver.check() != z3.unsat:
            live.append(a.label)
    assert not live, f"{spec.name}: never enabled in the sample, so its update went unchecked: {live}"
    # the invariants are evaluated on both outcomes somewhere (a constant invariant would prove little)
    for name, v in invs.items():
        assert v.any(), f"{spec.name}: invariant {name} fails on every sampled state"
    assert any(not v.all() for v in invs.values())


def test_conformance_guards(run):
    spec, _, bad, _, _ = run
    assert not bad["guards"], fail_text(bad["guards"])


def test_conformance_updates(run):
    spec, _, bad, _, _ = run
    assert not bad["updates"], fail_text(bad["updates"])


def test_conformance_invariants(run):
    spec, _, bad, _, _ = run
    assert not bad["invariants"], fail_text(bad["invariants"])


@pytest.mark.parametrize("config", NATIVE_CONFIGS, ids=config_id)
def test_conformance_native_kernels(config):
    """The native kernels against numpy on the same sample as the other backends (same seed)."""
    name, bounds = config
    spec = SPECS[name](**bounds)
    rows = sample(spec, sample_rng(name, bounds))
    bad = native_mismatches(spec, rows, numpy_results(spec, rows))
    assert not bad, fail_text(bad)


@pytest.mark.parametrize("config", NATIVE_CONFIGS, ids=config_id)
def test_conformance_compiled_kernels(config):
    """The compiled kernels (C: a second or two of the C compiler's CPU a configuration, once per machine)
    against numpy on the same sample."""
    from isrcheck.model import cbuild
    if cbuild.compiler() is None:
        pytest.skip("no C compiler: the search runs on numpy's and numba's kernels")
    name, bounds = config
    spec = SPECS[name](**bounds)
    rows = sample(spec, sample_rng(name, bounds))
    bad = compiled_mismatches(spec, rows, numpy_results(spec, rows))
    assert not bad, fail_text(bad)


# ------------------------------------------------------------------------------------------
# the harness itself must see a disagreement when there is one
# ------------------------------------------------------------------------------------------
class _Int8Overflow(Spec):
    """A spec whose intermediate arithmetic leaves int8: numpy wraps around, scalar and z3 do not."""

    name = "int8-overflow"

    def fields(self):
        return [Field("x", 0, 10), Field("flag", 0, 1, boolean=True)]

    @action()
    def big(self, s):
        s.require(s.x * 16 > 100)          # x=8: 128, which wraps to -128 in int8
        s.flag = True

    @action()
    def scaled(self, s):
        s.require(s.x <= 9)
        s.x = where(s.x * 13 > 100, 10, s.x + 1)   # at most 117: fits int8, so all backends agree

    @invariant("small")
    def small(self, s):
        return s.x * 16 < 100


def test_conformance_int8_overflow_is_rejected_at_load():
    """numpy batches compute in int8: a spec whose intermediate arithmetic can leave it does not load."""
    with pytest.raises(DeclarationError, match="-128..127"):
        _Int8Overflow()


def test_conformance_harness_reports_backend_disagreement(monkeypatch):
    """kip-320 on a numpy backend that lies about one guard and one invariant: the harness must notice."""
    guards, holds = backends.Batch.guards, backends.Batch.holds
    monkeypatch.setattr(backends.Batch, "guards", lambda self, batch: [
        ~g if inst.name == "produce" else g for inst, g in zip(self.spec.actions, guards(self, batch))])
    monkeypatch.setattr(backends.Batch, "holds", lambda self, inv, batch: (
        ~holds(self, inv, batch) if inv.name == "log-matching" else holds(self, inv, batch)))
    spec = Kip320(max_epochs=2)
    rows = walk_rows(spec, 40, np.random.default_rng(SEED))
    bad, _, _ = compare(spec, rows)
    assert bad["guards"] and all("action produce(" in m for m in bad["guards"])
    assert len(bad["invariants"]) == len(rows) and all("invariant log-matching" in m for m in bad["invariants"])

def test_conformance_harness_reports_native_disagreement(monkeypatch):
    """kip-101 on native kernels that lie about one invariant and drop one action's first move: both noticed (kip-101,
    whose kernels the native conformance test compiles too)."""
    from isrcheck.model.native import Native
    expand, holds = Native.expand, Native.holds

    def dropping(self, batch, fps, multipliers):
        parts, enabled, fired = expand(self, batch, fps, multipliers)
        return [(k, r[1:], {c: v[1:] for c, v in cols.items()}, h[1:]) if k == parts[0][0] else (k, r, cols, h)
                for k, r, cols, h in parts], enabled, fired

    monkeypatch.setattr(Native, "expand", dropping)
    monkeypatch.setattr(Native, "holds", lambda self, inv, batch: (
        ~holds(self, inv, batch) if inv.name == "log-matching" else holds(self, inv, batch)))
    spec = SPECS["kip-101"]()
    rows = walk_rows(spec, 40, np.random.default_rng(SEED))
    bad = native_mismatches(spec, rows, numpy_results(spec, rows))
    assert sum("native moves from" in m for m in bad) == 1
    assert sum("invariant log-matching" in m for m in bad) == len(rows)


def test_conformance_harness_reports_compiled_disagreement(monkeypatch):
    """kip-101 on compiled kernels that lie about one invariant, or build one successor wrong: noticed."""
    from isrcheck.model import cbuild
    from isrcheck.model.c_kernels import CKernels
    if cbuild.compiler() is None:
        pytest.skip("no C compiler")
    first_violation, build = CKernels.first_violation, CKernels.build

    def miswritten(self, *args):
        rows, lanes, parent, action = build(self, *args)
        rows[0, -1] ^= 1
        return rows, lanes, parent, action

    monkeypatch.setattr(CKernels, "first_violation", lambda self, name, rows: (
        0 if name == "log-matching" and first_violation(self, name, rows) < 0 else first_violation(self, name, rows)))
    monkeypatch.setattr(CKernels, "build", miswritten)
    spec = SPECS["kip-101"]()
    rows = walk_rows(spec, 40, np.random.default_rng(SEED))
    bad = compiled_mismatches(spec, rows, numpy_results(spec, rows))
    assert sum("compiled successor differs" in m for m in bad) == 1
    assert sum("invariant log-matching" in m for m in bad) == len(rows)
