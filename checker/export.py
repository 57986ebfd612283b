"""Traces as diagrams: a Mermaid sequence diagram, or a Graphviz DOT state graph.

API (``isrcheck show --format mermaid|dot`` prints these)::

    to_mermaid(spec, trace, invariant=None) -> str
    to_dot(spec, trace, invariant=None) -> str
    to_graph(spec, trace, invariant=None) -> networkx.MultiDiGraph

``trace`` is a :class:`checker.trace.Trace` or engine steps
``[(ActionInstance or None, row)]``, as for :mod:`checker.explain`.

Mermaid: a ``sequenceDiagram`` with participants Controller, Producer, r0..rN
and one message per step (controller decisions go from Controller, LeaderAndIsr
applications from Controller to the broker, produce requests from Producer,
fetches and OffsetsForLeaderEpoch from follower to leader, ISR changes from the
leader to Controller; crashes, restarts and other broker-local steps are
messages from a broker to itself). The marks of :func:`checker.explain.explain`
(acknowledged, lost, diverged, violated) are added as notes.

DOT: built with networkx; nodes are the distinct states of the trace (a state
reached twice is one node), edges the actions, labelled ``i: action(params)``.
Uses ``networkx.drawing.nx_pydot`` when pydot is installed; otherwise the DOT
text is written from the networkx graph here.
"""
from __future__ import annotations

import json

import networkx as nx

from isrcheck.checker.explain import _normalize, _replicas, _S, explain
from isrcheck.checker.trace import is_lasso


def _clean(text):
    """Text safe inside a Mermaid message or note (no statement separators, entity codes or line breaks)."""
    return (str(text).replace(";", ",").replace("#", "no.").replace("\n", " ")
            .replace("<", "‹").replace(">", "›"))


def _message(name, params, prev, cur, R):
    """(from, to, text) of one step."""
    def r(k):
        return f"r{params[k]}" if k in params else None
    p = params
    if name == "elect_leader":
        return "Controller", r("l"), f"elect r{p['l']} leader, epoch {cur.get('q_epoch')}, ISR {_isr(cur)}"
    if name == "controller_shrink_isr":
        return "Controller", "Controller", f"remove dead r{p['r']} from ISR, epoch {cur.get('q_epoch')}"
    if name == "controller_offline":
        return "Controller", "Controller", f"r{p['r']} dead, partition offline, epoch {cur.get('q_epoch')}"
    if name == "controller_failover":
        return "Controller", "Controller", f"controller failover (in-flight LeaderAndIsr electing r{p['l']})"
    if name in ("apply_leader_and_isr", "apply_stale_leader_and_isr"):
        leader = cur.get("leader", p["r"])
        role = "leader" if leader == p["r"] else ("no leader" if leader is None or leader >= R
                                                   else f"follow r{leader}")
        e = p.get("e", cur.get("leader_epoch", p["r"]))
        return "Controller", r("r"), f"LeaderAndIsr epoch {e} applied: {role}"
    if name == "produce":
        o = prev.get("leo", p["l"])
        return "Producer", r("l"), f"produce record {cur.get('log_record', p['l'], o)} at offset {o}"
    if name in ("fetch", "fetch_response_lost"):
        f = p["f"]
        got = f"LEO {prev.get('leo', f)}→{cur.get('leo', f)}, HW {cur.get('hw', f)}"
        if name == "fetch_response_lost":
            got = "response lost"
        return r("f"), r("l"), f"Fetch(offset {prev.get('leo', f)}): {got}"
    if name == "truncate_by_epoch":
        f = p["f"]
        return r("f"), r("l"), f"OffsetsForLeaderEpoch: truncate {prev.get('leo', f)}→{cur.get('leo', f)}"
    if name == "shrink_isr":
        return r("l"), "Controller", f"shrink ISR: drop r{p['f']}"
    if name == "alter_isr":
        return r("l"), "Controller", "AlterIsr"
    if name == "crash":
        return r("r"), r("r"), f"crash (HW from checkpoint: {cur.get('hw', p['r'])})"
    if name in ("shutdown", "restart", "flush"):
        return r("r"), r("r"), name
    if name == "checkpoint_hw":
        return r("r"), r("r"), f"checkpoint HW {cur.get('checkpoint_hw', p['r'])}"
    who = next((f"r{v}" for k, v in p.items() if isinstance(v, int) and 0 <= v < R), "Controller")
    return who, who, f"{name}({', '.join(f'{k}={v}' for k, v in p.items())})"


def _isr(s):
    return "{" + ",".join(f"r{i}" for i in s.isr()) + "}"


def to_mermaid(spec, trace, invariant=None):
    """A Mermaid sequence diagram of the trace, one message per step."""
    invariant, steps = _normalize(spec, trace, invariant)
    R = _replicas(spec, steps)
    states = [_S(st, R) for _, _, st in steps]
    marks = {}
    for line in explain(spec, trace, invariant):
        if line.kind != "step":
            marks.setdefault(line.step, []).append(line)
    out = ["sequenceDiagram", "    participant Controller", "    participant Producer"]
    out += [f"    participant r{r}" for r in range(R)]
    if invariant:
        out.append(f"    Note over Controller,r{R - 1}: {_clean(spec.name)}: {_clean(invariant)}")
    for i, (name, params, _) in enumerate(steps):
        if name is not None:
            a, b, text = _message(name, params, states[i - 1], states[i], R)
            out.append(f"    {a}->>{b}: {i}. {_clean(text)}")
        for line in marks.get(i, []):
            where = _note_over(line, params, R)
            out.append(f"    Note over {where}: {_clean(line.kind.upper())}: {_clean(line.text)}")
    if is_lasso(trace):
        out.append(f"    Note over Controller,r{R - 1}: {_clean(_loop_words(trace))}")
    return "\n".join(out) + "\n"


def _loop_words(trace):
    """How a lasso's loop repeats, in words."""
    loop, last = trace.extra["loop"], len(trace.steps) - 1
    if loop == last:
        return f"from step {loop} on, the state stutters forever"
    return f"from step {loop} on, steps {loop + 1} to {last} repeat forever"


def _note_over(line, params, R):
    reps = [f"r{v}" for k, v in params.items() if isinstance(v, int) and 0 <= v < R and k in ("r", "l", "f")]
    if not reps:
        return f"r0,r{R - 1}" if R > 1 else "r0"
    return ",".join(dict.fromkeys(reps[:2]))


# ======================================================================================
# DOT
# ======================================================================================
def _state_label(s, R):
    lines = []
    for r in range(R):
        log = " ".join(f"{rec}@{ep}" for rec, ep in s.log(r)) or "-"
        role = "L" if s.believes_leads(r) else ("F" if s.get("leader", r) is not None and s.get("leader", r) < R
                                                else "-")
        up = "" if s.get("up", r, default=True) else " DOWN"
        lines.append(f"r{r} {role} e{s.get('leader_epoch', r)} [{log}] leo={s.get('leo', r)} hw={s.get('hw', r)}{up}")
    if s.has("q_leader"):
        q = s.get("q_leader")
        lines.append(f"ZK: leader={'-' if q is None or q >= R else f'r{q}'} epoch={s.get('q_epoch')} "
                     f"ISR={_isr(s)}")
    acked = s.acked()
    if acked:
        lines.append("acked: " + ", ".join(f"{m}@{o}" for m, o in sorted(acked.items())))
    return "\n".join(lines)


def to_graph(spec, trace, invariant=None):
    """The trace as a networkx MultiDiGraph: nodes are distinct states, edges the actions."""
    invariant, steps = _normalize(spec, trace, invariant)
    R = _replicas(spec, steps)
    g = nx.MultiDiGraph(name=f"{spec.name} {invariant or ''}".strip())
    ids = {}
    prev = None
    for i, (name, params, st) in enumerate(steps):
        key = json.dumps(st, sort_keys=True)
        node = ids.get(key)
        if node is None:
            node = ids[key] = f"s{len(ids)}"
            g.add_node(node, label=_state_label(_S(st, R), R), step=i)
        if i == len(steps) - 1 and invariant:
            g.nodes[node]["violated"] = invariant
        if prev is not None:
            label = f"{i}: {name}({', '.join(f'{k}={v}' for k, v in params.items())})"
            g.add_edge(prev, node, label=label, step=i)
        prev = node
    if is_lasso(trace) and trace.extra["loop"] == len(steps) - 1:
        g.add_edge(prev, prev, label=_loop_words(trace), step=len(steps))
    return g


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + (
        "\\l" if "\n" in str(text) else "") + '"'


def to_dot(spec, trace, invariant=None):
    """Graphviz DOT text of the trace's state graph."""
    g = to_graph(spec, trace, invariant)
    for n, data in g.nodes(data=True):
        data["shape"] = "box"
        data["fontname"] = "monospace"
        if data.get("violated"):
            data["color"] = "red"
            data["penwidth"] = 2
    try:
        from networkx.drawing.nx_pydot import to_pydot
    except ImportError:                      # pragma: no cover - networkx without its pydot module
        to_pydot = None
    if to_pydot is not None:
        try:
            import pydot  # noqa: F401
        except ImportError:
            to_pydot = None
    if to_pydot is not None:                 # pragma: no cover - pydot is not a dependency
        h = nx.MultiDiGraph()
        for n, data in g.nodes(data=True):
            h.add_node(n, **{k: _quote(v) if isinstance(v, str) else v for k, v in data.items()})
        for a, b, data in g.edges(data=True):
            h.add_edge(a, b, **{k: _quote(v) if isinstance(v, str) else v for k, v in data.items()})
        return to_pydot(h).to_string()
    out = [f"digraph {_quote(g.graph.get('name') or 'trace')} {{", "  rankdir=TB;"]
    for n, data in g.nodes(data=True):
        attrs = ", ".join(f"{k}={_quote(v) if isinstance(v, str) else v}" for k, v in data.items()
                          if k not in ("step", "violated"))
        out.append(f"  {n} [{attrs}];")
    for a, b, data in g.edges(data=True):
        out.append(f"  {a} -> {b} [label={_quote(data['label'])}];")
    out.append("}")
    return "\n".join(out) + "\n"
