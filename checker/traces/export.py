"""Traces as diagrams: a Mermaid sequence diagram, or a Graphviz DOT state graph.

API (``isrcheck show --format mermaid|dot`` prints these)::

    to_mermaid(spec, trace, invariant=None) -> str
    to_dot(spec, trace, invariant=None) -> str
    to_graph(spec, trace, invariant=None) -> networkx.MultiDiGraph

``trace`` is a :class:`checker.traces.trace.Trace` or engine steps
``[(ActionInstance or None, row)]``, as for ``Presentation.explain``.

Mermaid: a ``sequenceDiagram`` with the participants of the spec's presentation
(``model/present.py``; e.g. Controller, Producer) and r0..rN, and one message
per step, as the presentation words it; the marks of its ``explain`` (e.g.
acknowledged, lost, diverged, violated) are added as notes.

DOT: built with networkx; nodes are the distinct states of the trace (a state
reached twice is one node), labelled by the presentation, edges the actions,
labelled ``i: action(params)``.
Uses ``networkx.drawing.nx_pydot`` when pydot is installed; otherwise the DOT
text is written from the networkx graph here.
"""
from __future__ import annotations

import json

import networkx as nx

from isrcheck.checker.traces.trace import is_lasso, loop_words
from isrcheck.model.present import step_label


def _clean(text):
    """Text safe inside a Mermaid message or note (no statement separators, entity codes or line breaks)."""
    return (str(text).replace(";", ",").replace("#", "no.").replace("\n", " ")
            .replace("<", "‹").replace(">", "›"))


def to_mermaid(spec, trace, invariant=None):
    """A Mermaid sequence diagram of the trace, one message per step."""
    present = spec.presentation
    invariant, steps = present.steps(trace, invariant)
    R = present.R
    marks = {}
    for line in present.explain(trace, invariant):
        if line.kind != "step":
            marks.setdefault(line.step, []).append(line)
    out = ["sequenceDiagram"] + [f"    participant {p}" for p in present.participants]
    out += [f"    participant r{r}" for r in range(R)]
    if invariant:
        first = present.participants[0] if present.participants else "r0"
        out.append(f"    Note over {first},r{R - 1}: {_clean(spec.name)}: {_clean(invariant)}")
    for i, (name, params, state) in enumerate(steps):
        if name is not None:
            a, b, text = present.message(name, params, steps[i - 1][2], state)
            out.append(f"    {a}->>{b}: {i}. {_clean(text)}")
        for line in marks.get(i, []):
            out.append(f"    Note over {present.note_over(params)}: {_clean(line.kind.upper())}: {_clean(line.text)}")
    if is_lasso(trace):
        first = present.participants[0] if present.participants else "r0"
        out.append(f"    Note over {first},r{R - 1}: {_clean(loop_words(trace))}")
    return "\n".join(out) + "\n"


# ======================================================================================
# DOT
# ======================================================================================
def to_graph(spec, trace, invariant=None):
    """The trace as a networkx MultiDiGraph: nodes are distinct states, edges the actions."""
    present = spec.presentation
    invariant, steps = present.steps(trace, invariant)
    g = nx.MultiDiGraph(name=f"{spec.name} {invariant or ''}".strip())
    ids = {}
    prev = None
    for i, (name, params, st) in enumerate(steps):
        key = json.dumps(st, sort_keys=True)
        node = ids.get(key)
        if node is None:
            node = ids[key] = f"s{len(ids)}"
            g.add_node(node, label=present.state_label(st), step=i)
        if i == len(steps) - 1 and invariant:
            g.nodes[node]["violated"] = invariant
        if prev is not None:
            label = f"{i}: {step_label(name, params)}"
            g.add_edge(prev, node, label=label, step=i)
        prev = node
    if is_lasso(trace) and trace.extra["loop"] == len(steps) - 1:
        g.add_edge(prev, prev, label=loop_words(trace), step=len(steps))
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
