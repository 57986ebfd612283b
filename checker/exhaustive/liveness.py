"""Liveness: ``P ~> Q`` (whenever P holds, Q holds then or later) under weak and strong fairness.

Semantics as TLA+/TLC's: a behaviour is an infinite sequence of steps; every
state may stutter, so a behaviour may stay in one state forever unless fairness
forbids it. ``P ~> Q`` is violated by a reachable state where P holds and Q does
not, from which a fair cycle is reachable through states where Q fails.

Fairness is declared per action and applies to each of its instances (each
parameter combination) on its own. On a cycle, weak fairness of an instance A
holds when A is taken on a step of the cycle or is disabled at one of its states;
strong fairness when A is taken on a step or is disabled at all of its states.
A step of A whose update leaves the state unchanged is a step of A (a fetch that
returns nothing new is still a fetch). TLC counts only state-changing steps
(``<<A>>_vars``); for weak fairness that gives the same verdicts (a state where
A only stutters has an A self-loop in every component holding it), for strong
fairness it can differ.

The check runs on the exhaustive engine's reachable states (checker/exhaustive/bfs.py,
which keeps 14 bytes per state), stored here as bit-packed rows; the edges of
the subgraph where Q fails are regenerated from those rows with the numpy batch
backend and the engine's fingerprints, and kept only while a property is checked:
strongly connected components (scipy's, linear time in C), the fairness of each
checked from per-component counts, and components that break a strong fairness
condition refined by dropping the states where that action is enabled
(Emerson-Lei). The counterexample is a lasso: the shortest path to the first
(in BFS order) violating state, the shortest path from it to a fair component,
and a cycle in that component that meets every fairness condition.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from isrcheck.checker.exhaustive.bfs import Search, peak_memory, run_within
from isrcheck.checker.engine.budget import UNLIMITED
from isrcheck.checker.engine.result import Measured
from isrcheck.checker.traces.trace import from_steps
from isrcheck.model import backends


@dataclass
class Lasso:
    steps: list          # [(ActionInstance or None, row)]: prefix, then the cycle
    loop: int            # index of the state the cycle starts from; the last state equals it
    trigger: int         # index of the state where P holds, from which Q never holds


@dataclass
class LivenessResult(Measured):
    """One property's verdict; the other fields mean what they mean in checker/engine/result.py."""
    property: str
    verdict: str                  # holds | violated | unknown
    lasso: Lasso | None
    distinct_states: int
    edges: int                    # transitions among states where Q fails (self-loops included)
    fair_states: int              # states where Q fails that lie on a fair cycle
    seconds: float
    retained_bytes: int
    peak_memory_bytes: int
    budget_hit: str | None


def lasso_trace(spec, result, **meta):
    """The lasso of a violated property as a trace: ITF with the loop's start and the trigger in ``#meta``."""
    prop, lasso = spec.properties[result.property], result.lasso
    return from_steps(spec, result.property, "local", lasso.steps, loop=lasso.loop, trigger=lasso.trigger,
                      fairness=[str(f) for f in prop.fairness], **meta)


class PackedRows:
    """State rows bit-packed into 64-bit words: each cell takes the bits its range needs (kip-320: 16 bytes, not 66)."""

    def __init__(self, layout):
        self.lo = layout.lo.astype(np.int64)
        bits = [max(1, int(hi - lo).bit_length()) for lo, hi in zip(layout.lo, layout.hi)]
        self.word, self.shift, self.mask = [], [], [np.uint64((1 << b) - 1) for b in bits]
        word, used = 0, 0
        for b in bits:
            if used + b > 64:
                word, used = word + 1, 0
            self.word.append(word)
            self.shift.append(np.uint64(used))
            used += b
        self.words = word + 1
        self.parts = []
        self.data = np.empty((self.words, 0), dtype=np.uint64)

    def append(self, batch):
        packed = np.zeros((self.words, batch.shape[1]), dtype=np.uint64)
        for c in range(batch.shape[0]):
            packed[self.word[c]] |= (batch[c].astype(np.int64) - self.lo[c]).astype(np.uint64) << self.shift[c]
        self.parts.append(packed)

    def seal(self):
        """Join the appended batches (once, after the search)."""
        self.data = np.concatenate([self.data] + self.parts, axis=1)
        self.parts = []

    def take(self, ids):
        """The rows of states ``ids``, column-major int8."""
        packed = np.take(self.data, ids, axis=1)
        out = np.empty((len(self.lo), packed.shape[1]), dtype=np.int8)
        for c in range(len(self.lo)):
            out[c] = ((packed[self.word[c]] >> self.shift[c]) & self.mask[c]).astype(np.int64) + self.lo[c]
        return out

    @property
    def size(self):
        return self.data.shape[1]

    @property
    def nbytes(self):
        return self.data.nbytes


class StateGraph:
    """Every reachable state, bit-packed, in the engine's BFS numbering; ids by fingerprint."""

    def __init__(self, spec, chunk=1 << 18, progress=None, budget=UNLIMITED):
        self.spec = spec
        self.search = Search(spec, [], chunk=chunk)
        self.states = PackedRows(spec.layout)
        fps = []

        def keep(rows):
            self.states.append(rows)
            fps.append(self.search.fingerprint.full(rows))
        self.result = run_within(self.search, budget, on_states=keep, progress=progress)
        self.states.seal()
        fps = np.concatenate(fps)
        self.order = np.argsort(fps).astype(np.uint32)
        self.sorted_fps = fps[self.order]

    @property
    def size(self):
        return self.states.size

    def rows(self, start, stop):
        """The rows of states start..stop-1, column-major."""
        return self.states.take(np.arange(start, min(stop, self.size)))

    @property
    def nbytes(self):
        level_start, parents, actions = self.search.tree
        return (self.states.nbytes + self.order.nbytes + self.sorted_fps.nbytes
                + sum(a.nbytes for a in parents) + sum(a.nbytes for a in actions))

    def ids(self, fps):
        """State ids of fingerprints, and whether each was found (not found: beyond a budget)."""
        pos = np.minimum(np.searchsorted(self.sorted_fps, fps), self.size - 1)
        return self.order[pos].astype(np.int64), self.sorted_fps[pos] == fps

    def path_to(self, state_id):
        """The engine's shortest path from the initial state: [(ActionInstance or None, row)]."""
        return self.search.trace(state_id, *self.search.tree)


class Subgraph:
    """The transitions among a set of states (local numbering), with the enabledness of the fair action instances."""

    def __init__(self, graph, nodes, fair_ids, chunk=1 << 16):
        spec, fp = graph.spec, graph.search.fingerprint
        self.nodes = nodes                                   # global ids, ascending
        local = np.full(graph.size, -1, dtype=np.int64)
        local[nodes] = np.arange(nodes.size)
        self.enabled = np.zeros((len(fair_ids), nodes.size), dtype=bool)
        where_fair = {aid: j for j, aid in enumerate(fair_ids)}
        src, dst, act = [], [], []
        for cs in range(0, nodes.size, chunk):
            ids = nodes[cs:cs + chunk]
            batch = graph.states.take(ids)
            fps, guards = fp.full(batch), backends.batch(spec).guards(batch)
            for inst in spec.actions:
                rows = np.flatnonzero(guards[inst.id])
                if rows.size == 0:
                    continue
                if inst.id in where_fair:
                    self.enabled[where_fair[inst.id], cs + rows] = True
                update = backends.batch(spec).update(inst, batch, rows)
                h = np.take(fps, rows)
                for c, v in update._written.items():
                    h += fp.delta(c, update.old[c], v.astype(np.int8) if isinstance(v, np.ndarray) else int(v))
                target, found = graph.ids(h)
                target = np.where(found, local[target], -1)
                keep = target >= 0                           # the successor is in the set (and was reached)
                src.append(cs + rows[keep])
                dst.append(target[keep])
                act.append(np.full(int(keep.sum()), inst.id, dtype=np.uint16))
        self.src = np.concatenate(src).astype(np.int32) if src else np.empty(0, np.int32)
        self.dst = np.concatenate(dst).astype(np.int32) if dst else np.empty(0, np.int32)
        self.act = np.concatenate(act) if act else np.empty(0, np.uint16)

    @property
    def size(self):
        return self.nodes.size

    @property
    def nbytes(self):
        return self.src.nbytes + self.dst.nbytes + self.act.nbytes + self.enabled.nbytes

    def matrix(self, keep=None, reverse=False):
        s, d = (self.src, self.dst) if keep is None else (self.src[keep], self.dst[keep])
        if reverse:
            s, d = d, s
        return csr_matrix((np.ones(s.size, dtype=np.int8), (s, d)), shape=(self.size, self.size))

    def fair_components(self, fairness):
        """A label per node: its fair component (a strongly connected set with a fair cycle through all of it), or -1.

        ``fairness`` is [(kind, action id)], aligned with ``enabled``.
        """
        label = np.full(self.size, -1, dtype=np.int64)
        alive = np.ones(self.size, dtype=bool)
        next_label = 0
        while alive.any():
            keep = alive[self.src] & alive[self.dst]
            _, comp = connected_components(self.matrix(keep), directed=True, connection="strong")
            comp = comp.astype(np.int64)
            n = int(comp.max()) + 1
            members = np.bincount(comp[alive], minlength=n)
            inside = keep & (comp[self.src] == comp[self.dst])
            weak_ok = members > 0
            strong_bad = np.zeros(n, dtype=bool)
            drop = np.zeros(self.size, dtype=bool)            # states a strong fairness condition rules out
            for j, (kind, aid) in enumerate(fairness):
                fired = np.zeros(n, dtype=bool)
                fired[comp[self.src[inside & (self.act == aid)]]] = True
                enabled_count = np.bincount(comp[alive & self.enabled[j]], minlength=n)
                if kind == "weak":
                    weak_ok &= fired | (enabled_count < members)
                else:
                    bad = ~fired & (enabled_count > 0)
                    strong_bad |= bad
                    drop |= self.enabled[j] & bad[comp]
            fair = weak_ok & ~strong_bad
            found = alive & fair[comp]
            if found.any():
                ids, dense = np.unique(comp[found], return_inverse=True)
                label[found] = next_label + dense
                next_label += ids.size
            alive &= weak_ok[comp] & strong_bad[comp] & ~drop
        return label

    def reaching(self, targets):
        """Nodes with a path to a target node (targets included)."""
        virtual = self.size
        s = np.concatenate([self.dst, np.full(int(targets.sum()), virtual)])
        d = np.concatenate([self.src, np.flatnonzero(targets)])
        g = csr_matrix((np.ones(s.size, dtype=np.int8), (s, d)), shape=(virtual + 1, virtual + 1))
        reached = breadth_first_order(g, virtual, directed=True, return_predecessors=False)
        out = np.zeros(self.size, dtype=bool)
        out[reached[reached < virtual]] = True
        return out

    def shortest_path(self, start, goal, within=None):
        """Shortest path (list of (action id, node)) from ``start`` to the nearest node where ``goal`` holds.

        With ``within`` (a node mask), only edges between such nodes are used.
        """
        if goal[start]:
            return []
        keep = None if within is None else within[self.src] & within[self.dst]
        order, pred = breadth_first_order(self.matrix(keep), start, directed=True, return_predecessors=True)
        hits = order[goal[order]]
        if hits.size == 0:
            raise RuntimeError("internal error: no path to a fair component")
        path, node = [], int(hits[0])
        while node != start:
            prev = int(pred[node])
            path.append((self.action_between(prev, node, keep), node))
            node = prev
        return path[::-1]

    def action_between(self, u, v, keep=None):
        """An action instance taking node u to node v (the one with the smallest id)."""
        m = (self.src == u) & (self.dst == v)
        if keep is not None:
            m &= keep
        return int(self.act[m].min())


def fairness_instances(spec, prop):
    """[(kind, action instance id)] for every instance of every action the property's fairness names."""
    return [(f.kind, a.id) for f in prop.fairness for a in spec.actions if a.name == f.action]


def check_leads_to(spec, prop, graph):
    """Check one property on an explored StateGraph: (lasso or None, edges where Q fails, fair states, bytes kept)."""
    q_fails = np.zeros(graph.size, dtype=bool)
    p_holds = np.zeros(graph.size, dtype=bool)
    step = 1 << 18
    for cs in range(0, graph.size, step):
        batch = graph.rows(cs, cs + step)
        q_fails[cs:cs + step] = ~backends.batch(spec).holds(prop.goal, batch)
        p_holds[cs:cs + step] = backends.batch(spec).holds(prop.trigger, batch)
    fairness = fairness_instances(spec, prop)
    sub = Subgraph(graph, np.flatnonzero(q_fails), [aid for _, aid in fairness])
    label = sub.fair_components(fairness)
    fair = label >= 0
    bad = sub.reaching(fair) & p_holds[sub.nodes]
    kept = sub.nbytes + q_fails.nbytes + p_holds.nbytes
    if not bad.any():
        return None, sub.src.size, int(fair.sum()), kept
    start = int(np.flatnonzero(bad)[0])               # the smallest id: the shallowest such state
    to_fair = sub.shortest_path(start, fair)
    entry = to_fair[-1][1] if to_fair else start
    cycle = _fair_cycle(sub, fairness, label == label[entry], entry)
    prefix = graph.path_to(int(sub.nodes[start]))
    steps, row = list(prefix), prefix[-1][1]
    for aid, node in to_fair + cycle:
        inst = spec.actions[aid]
        row = backends.scalar(spec).step(row, inst)
        if row is None or not np.array_equal(row, graph.states.take([sub.nodes[node]])[:, 0]):
            raise RuntimeError(f"internal error: {inst.label} does not reach the stored state on replay")
        steps.append((inst, row))
    lasso = Lasso(steps, loop=len(prefix) - 1 + len(to_fair), trigger=len(prefix) - 1)
    return lasso, sub.src.size, int(fair.sum()), kept


def _fair_cycle(sub, fairness, component, entry):
    """A cycle from ``entry`` through a fair component that meets every fairness condition: [(action id, node)].

    Empty when every weakly fair instance is disabled at ``entry`` and every strongly fair one in the whole
    component: stuttering at ``entry`` is then fair.
    """
    inside = component[sub.src] & component[sub.dst]
    path, at = [], entry

    def met(j, kind, aid):
        visited = [entry] + [n for _, n in path]
        if any(a == aid for a, _ in path):
            return True
        if kind == "weak":
            return not sub.enabled[j, visited].all()
        return not sub.enabled[j, component].any()

    for j, (kind, aid) in enumerate(fairness):
        if met(j, kind, aid):
            continue
        edges = np.flatnonzero(inside & (sub.act == aid))
        if edges.size:                                # take an A step inside the component
            sources = np.zeros(sub.size, dtype=bool)
            sources[sub.src[edges]] = True
            path += sub.shortest_path(at, sources, within=component)
            at = path[-1][1] if path else at
            e = edges[sub.src[edges] == at][0]
            path.append((aid, int(sub.dst[e])))
            at = int(sub.dst[e])
        else:                                         # weak: go through a state where A is disabled
            goal = component & ~sub.enabled[j]
            path += sub.shortest_path(at, goal, within=component)
            at = path[-1][1] if path else at
    if path and at != entry:
        home = np.zeros(sub.size, dtype=bool)
        home[entry] = True
        path += sub.shortest_path(at, home, within=component)
    return path


def check(spec, properties, chunk=1 << 18, progress=None, budget=UNLIMITED):
    """Explore once (within ``budget``: its max_states, max_depth, seconds), then check each named property:
    {name: LivenessResult}."""
    start = time.perf_counter()
    graph = StateGraph(spec, chunk=chunk, progress=progress, budget=budget)
    out = {}
    for name in properties:
        lasso, edges, fair_states, kept = check_leads_to(spec, spec.properties[name], graph)
        complete = graph.result.complete
        verdict = "violated" if lasso else "holds" if complete else "unknown"
        out[name] = LivenessResult(name, verdict, lasso, graph.size, edges, fair_states,
                                   time.perf_counter() - start, graph.nbytes + kept, peak_memory(),
                                   graph.result.budget_hit)
    return out
