"""A trace as one self-contained HTML page (``isrcheck show TRACE --format html --output FILE``).

API::

    to_html(spec, trace, invariant=None) -> str

``trace`` is a :class:`checker.traces.trace.Trace` or engine steps, as for ``Presentation.explain``.
Everything protocol-specific comes from the spec's presentation (``model/present.py``): the
columns, each replica's log entry by entry (``log_cells``: cells coloured by leader epoch), the LEO
and HW markers, who believes it leads, the narration and its marks, the lost record. The page
steps through the trace with the keyboard (left/right, home/end) or the timeline; ``#N`` in the
address opens step N.

The page loads nothing: no network, no external script, style or font (its Content-Security-Policy
forbids any). The trace data is embedded as JSON inside a ``<script type="application/json">``
element with ``<``, ``>`` and ``&`` escaped, and the page's script writes it with ``textContent``
only, so a hostile action name or field value cannot inject markup or script.
"""
from __future__ import annotations

import html
import json

from isrcheck.checker.traces.show import lasso_words, narration
from isrcheck.checker.traces.trace import is_lasso
from isrcheck.model.present import step_label


def _replica(present, fields, prev, state, r, lost):
    cells = present.log_cells(state, r)
    before = present.log_cells(prev, r) if prev is not None else None
    log = None
    gone = []
    if cells is not None:
        log = [{"o": o, "rec": str(m), "epoch": e, "lost": lost is not None and (m, o) == lost,
                "changed": before is not None and (o >= len(before) or before[o][1:] != (m, e))}
               for o, m, e in cells]
        now = {(o, m) for o, m, _ in cells}
        gone = [{"o": o, "rec": str(m), "lost": lost is not None and (m, o) == lost}
                for o, m, _ in (before or []) if (o, m) not in now]
    cols = [{"text": present.fmt_value(f, state[f.name][r], 1),
             "changed": prev is not None and prev[f.name][r] != state[f.name][r]} for f in fields]
    return {"name": f"r{r}", "leads": present.believes_leads(state, r), "log": log, "gone": gone,
            "markers": present.markers(state, r), "cols": cols}


def trace_data(spec, trace, invariant=None):
    """Everything the page shows, as plain JSON-able data (one entry per step)."""
    present = spec.presentation
    invariant, steps = present.steps(trace, invariant)
    shown, others = present.table_fields()
    replayed, lines, lasso = None, {}, is_lasso(trace)
    if hasattr(trace, "steps") and invariant == trace.invariant:      # a Trace: said as `show` says it
        replayed, lines = narration(spec, trace)
    else:
        for line in present.explain(trace, invariant):
            lines.setdefault(line.step, []).append(line)
    notes = {i: [{"kind": line.kind, "text": line.text} for line in got] for i, got in lines.items()}
    lost = present.lost(trace, invariant) if replayed is None or replayed.ok else None
    out, prev = [], None
    for i, (name, params, state) in enumerate(steps):
        out.append({
            "label": step_label(name, params),
            "replicas": [_replica(present, shown, prev, state, r, lost) for r in range(present.R)],
            "partition": [{"name": f.name, "text": present.fmt_value(f, state[f.name], 0),
                           "changed": prev is not None and prev[f.name] != state[f.name]} for f in others],
            "notes": notes.get(i, []),
        })
        prev = state
    inv = spec.invariants.get(invariant) if invariant and not lasso else None
    bounds = getattr(trace, "bounds", None) or dict(spec.bounds)
    if replayed is not None and not replayed.ok:
        summary = f"does not reproduce: {replayed.message} (as isrcheck replay says): no violation shown"
    elif lasso:
        summary = lasso_words(spec, trace)[0]
    else:
        summary = present.summary(trace, invariant) if invariant else ""
    if lasso:           # a liveness property: what it means, under which fairness, and how the loop repeats
        sentences = lasso_words(spec, trace)[1]
        meaning, consequence = spec.properties[invariant].meaning, " ".join(f"{x.rstrip('.')}." for x in sentences)
    else:
        meaning, consequence = (present.meaning(invariant), present.consequence(invariant)) if inv else ("", "")
    return {
        "spec": spec.name, "invariant": invariant, "kind": "property" if lasso else "invariant",
        "engine": getattr(trace, "engine", "?"), "bounds": " ".join(f"{k}={v}" for k, v in bounds.items()),
        "summary": summary, "meaning": meaning, "consequence": consequence,
        "loop": ({"start": trace.extra["loop"], "trigger": trace.extra["trigger"]}
                 if lasso and replayed is not None and replayed.ok else None),
        "epilogue": [list(e) for e in present.epilogue()],
        "log_header": present.log_header, "headers": [present.header(f) for f in shown],
        "capacity": max([len(state[present.log_fields[0]][0]) for _, _, state in steps[:1]
                         if present.log_fields and present.log_fields[0] in state]
                        + [len(r["log"] or []) + len(r["gone"]) for s in out for r in s["replicas"]]
                        + [m for s in out for r in s["replicas"] for m in r["markers"].values()] + [1]),
        "lost": {"record": str(lost[0]), "offset": lost[1]} if lost else None,
        "steps": out,
    }


def _embed(data):
    """JSON that cannot end its <script> element or open a comment: <, > and & as \\u escapes."""
    text = json.dumps(data, ensure_ascii=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def to_html(spec, trace, invariant=None):
    """The trace as one self-contained HTML page."""
    data = trace_data(spec, trace, invariant)
    title = html.escape(f"{data['spec']} · {data['invariant'] or 'trace'} — isrcheck")
    return (_PAGE.replace("__TITLE__", title).replace("__STYLE__", _STYLE).replace("__SCRIPT__", _SCRIPT)
            .replace("__DATA__", _embed(data)))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>__STYLE__</style>
</head>
<body>
<header>
  <h1 id="title"></h1>
  <p id="bounds"></p>
  <p id="summary"></p>
</header>
<nav>
  <button id="first" title="first step (Home)">«</button>
  <button id="prev" title="previous step (←)">◀</button>
  <span id="position"></span>
  <button id="next" title="next step (→)">▶</button>
  <button id="last" title="last step (End)">»</button>
  <ol id="timeline"></ol>
</nav>
<main>
  <h2 id="action"></h2>
  <div class="scroll"><table id="replicas"><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table></div>
  <p id="partition"></p>
  <ul id="notes"></ul>
</main>
<footer>
  <p id="legend"></p>
  <p id="meaning"></p>
  <p class="keys">Keys: ← → step · Home / End first and last step · the address #N opens step N.</p>
</footer>
<script type="application/json" id="trace-data">__DATA__</script>
<script>__SCRIPT__</script>
</body>
</html>
"""

_STYLE = """
:root { --ink: #1d2330; --muted: #667085; --line: #d0d5dd; --changed: #fff1b8; --bad: #d92d20; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       background: #f6f7f9; }
header, nav, main, footer { padding: 10px 24px; }
header { background: #1d2330; color: #fff; }
h1 { font-size: 18px; margin: 4px 0; font-weight: 600; }
#bounds { margin: 0; color: #98a2b3; font: 12px ui-monospace, Menlo, monospace; }
#summary { margin: 4px 0 6px; color: #ffb4ab; font-weight: 500; }
nav { display: flex; align-items: center; gap: 8px; background: #fff; border-bottom: 1px solid var(--line);
      position: sticky; top: 0; flex-wrap: wrap; }
button { font-size: 15px; border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 2px 10px;
         cursor: pointer; }
button:hover { background: #eef2ff; }
#position { min-width: 90px; text-align: center; font-variant-numeric: tabular-nums; font-weight: 600; }
#timeline { display: flex; gap: 3px; list-style: none; margin: 0 0 0 12px; padding: 0; flex-wrap: wrap; }
#timeline li { width: 22px; height: 22px; border-radius: 4px; background: #e4e7ec; font-size: 11px;
               text-align: center; line-height: 22px; cursor: pointer; color: var(--muted); }
#timeline li.marked { background: #fee4e2; color: var(--bad); }
#timeline li.loop { background: #d1e0ff; color: #155eef; }
#timeline li.loop.start { box-shadow: -3px 0 0 #155eef; }
#timeline li.current { background: #1d2330; color: #fff; }
h2 { font: 600 16px ui-monospace, SFMono-Regular, Menlo, monospace; margin: 8px 0 10px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
th, td { padding: 6px 10px; border-bottom: 1px solid #eaecf0; text-align: left; vertical-align: middle; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #f9fafb; }
td.name { font: 600 14px ui-monospace, Menlo, monospace; white-space: nowrap; }
td.value { font-family: ui-monospace, Menlo, monospace; }
.changed { background: var(--changed); }
.crown { display: inline-block; margin-left: 6px; padding: 0 6px; border-radius: 9px; background: #1d2330;
         color: #fff; font: 600 11px system-ui, sans-serif; }
.log { display: grid; grid-auto-rows: auto; column-gap: 2px; row-gap: 2px; }
.cell { height: 34px; border-radius: 4px; border: 1px solid rgba(0,0,0,.15); font: 12px ui-monospace, Menlo, monospace;
        display: flex; flex-direction: column; align-items: center; justify-content: center; line-height: 1.1; }
.cell small { font-size: 10px; opacity: .75; }
.cell.empty { background: repeating-linear-gradient(45deg, #f9fafb, #f9fafb 4px, #f2f4f7 4px, #f2f4f7 8px);
              border-style: dashed; }
.cell.new { box-shadow: 0 0 0 2px #f79009 inset; }
.cell.lost { outline: 3px solid var(--bad); outline-offset: -1px; font-weight: 700; }
.cell.gone { background: #fff; border: 2px dashed var(--bad); color: var(--bad); text-decoration: line-through; }
.mark { font: 600 10px system-ui, sans-serif; color: var(--muted); white-space: nowrap; margin-left: -4px; }
.mark .hw { color: #155eef; }
.mark .leo { color: #027a48; }
#partition { font-family: ui-monospace, Menlo, monospace; margin: 10px 0; }
#partition span { margin-right: 14px; padding: 1px 4px; border-radius: 3px; }
#notes { list-style: none; padding: 0; margin: 8px 0; max-width: 1000px; }
#notes li { background: #fff; border-left: 4px solid #98a2b3; padding: 6px 10px; margin: 4px 0; border-radius: 4px; }
#notes li .kind { font: 600 11px system-ui, sans-serif; text-transform: uppercase; color: var(--muted);
                  margin-right: 8px; }
#notes li.lost, #notes li.violated { border-left-color: var(--bad); background: #fef3f2; }
#notes li.acked { border-left-color: #12b76a; }
#notes li.diverged, #notes li.leader, #notes li.isr { border-left-color: #f79009; }
#notes li.loop, #notes li.trigger { border-left-color: #155eef; background: #eff4ff; }
#notes li.replay { border-left-color: #f79009; background: #fffaeb; }
footer { color: var(--muted); font-size: 13px; }
.swatch { display: inline-block; padding: 0 8px; margin-right: 6px; border-radius: 4px;
          border: 1px solid rgba(0,0,0,.15); color: var(--ink); }
"""

_SCRIPT = r"""
"use strict";
const data = JSON.parse(document.getElementById("trace-data").textContent);
const n = data.steps.length;
let current = 0;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = String(text);
  return e;
}
function epochColour(epoch) {
  const e = Number(epoch);
  if (!Number.isFinite(e)) return "#e4e7ec";
  return "hsl(" + ((e * 137.5 + 200) % 360) + ", 70%, " + (e <= 0 ? 90 : 80) + "%)";
}

document.getElementById("title").textContent =
  data.spec + " · " + (data.invariant ? data.kind + " " + data.invariant : "trace") + " · engine " + data.engine;
document.getElementById("bounds").textContent = data.bounds;
document.getElementById("summary").textContent = data.summary;
document.getElementById("meaning").textContent =
  data.invariant ? data.invariant + ": " + data.meaning + (data.consequence ? " " + data.consequence : "") : "";
for (const [label, text] of data.epilogue) {
  const p = el("p", null, label + ": " + text);
  document.querySelector("footer").insertBefore(p, document.querySelector("footer .keys"));
}
const epochs = new Set();
for (const s of data.steps) for (const r of s.replicas) for (const c of (r.log || [])) epochs.add(c.epoch);
const legend = document.getElementById("legend");
if (epochs.size) {
  legend.appendChild(el("span", null, "leader epochs: "));
  for (const e of [...epochs].sort((a, b) => a - b)) {
    const s = el("span", "swatch", "epoch " + e);
    s.style.background = epochColour(e);
    legend.appendChild(s);
  }
}
if (data.lost) {
  const s = el("span", "swatch", "lost record " + data.lost.record + " (offset " + data.lost.offset + ")");
  s.style.outline = "3px solid #d92d20";
  legend.appendChild(s);
}

const timeline = document.getElementById("timeline");
data.steps.forEach((s, i) => {
  const li = el("li", s.notes.some(x => x.kind === "lost" || x.kind === "violated" || x.kind === "trigger")
                      ? "marked" : "", i);
  li.title = s.label;
  if (data.loop && i >= data.loop.start) {          // a lasso: the steps that repeat forever
    li.classList.add("loop");
    if (i === data.loop.start) li.classList.add("start");
    li.title += i === data.loop.start ? " (the loop starts here)" : " (in the loop)";
  }
  li.addEventListener("click", () => go(i));
  timeline.appendChild(li);
});

const head = document.getElementById("head");
head.appendChild(el("th", null, "replica"));
const hasLog = data.steps[0].replicas[0].log !== null;
if (hasLog) head.appendChild(el("th", null, data.log_header));
for (const h of data.headers) head.appendChild(el("th", null, h));

function logGrid(r) {
  const grid = el("div", "log");
  const width = data.capacity;
  grid.style.gridTemplateColumns = "repeat(" + width + ", 52px) 40px";
  const gone = new Map(r.gone.map(g => [g.o, g]));
  for (let o = 0; o < width; o++) {
    const c = r.log[o];
    let cell;
    if (c) {
      cell = el("div", "cell" + (c.changed ? " new" : "") + (c.lost ? " lost" : ""));
      cell.appendChild(el("span", null, c.rec));
      cell.appendChild(el("small", null, o + " · e" + c.epoch));
      cell.style.background = epochColour(c.epoch);
      cell.title = "offset " + o + ": record " + c.rec + " written in leader epoch " + c.epoch;
    } else if (gone.has(o)) {
      const g = gone.get(o);
      cell = el("div", "cell gone" + (g.lost ? " lost" : ""));
      cell.appendChild(el("span", null, g.rec));
      cell.appendChild(el("small", null, "gone"));
      cell.title = "offset " + o + ": record " + g.rec + " was removed in this step";
    } else {
      cell = el("div", "cell empty");
    }
    cell.style.gridRow = "1";
    cell.style.gridColumn = String(o + 1);
    grid.appendChild(cell);
  }
  const at = new Map();
  for (const [name, o] of Object.entries(r.markers)) at.set(o, (at.has(o) ? at.get(o) + " " : "") + name);
  for (const [o, names] of at) {
    const m = el("div", "mark", "▲");
    for (const name of names.split(" ")) m.appendChild(el("span", name.toLowerCase(), name + " "));
    m.style.gridRow = "2";
    m.style.gridColumn = String(Math.min(o, width) + 1);
    grid.appendChild(m);
  }
  return grid;
}

function render() {
  const s = data.steps[current];
  document.getElementById("position").textContent = "step " + current + " / " + (n - 1)
    + (data.loop && current >= data.loop.start ? " ↻" : "");
  document.getElementById("action").textContent = current + ". " + s.label;
  const rows = document.getElementById("rows");
  rows.replaceChildren();
  for (const r of s.replicas) {
    const tr = el("tr");
    const name = el("td", "name", r.name);
    if (r.leads) name.appendChild(el("span", "crown", "believes it leads"));
    tr.appendChild(name);
    if (hasLog) { const td = el("td"); td.appendChild(logGrid(r)); tr.appendChild(td); }
    for (const c of r.cols) tr.appendChild(el("td", "value" + (c.changed ? " changed" : ""), c.text));
    rows.appendChild(tr);
  }
  const part = document.getElementById("partition");
  part.replaceChildren();
  for (const f of s.partition) part.appendChild(el("span", f.changed ? "changed" : "", f.name + "=" + f.text));
  const notes = document.getElementById("notes");
  notes.replaceChildren();
  for (const line of s.notes) {
    const li = el("li", line.kind);
    if (line.kind !== "step") li.appendChild(el("span", "kind", line.kind));
    li.appendChild(document.createTextNode(line.text));
    notes.appendChild(li);
  }
  [...timeline.children].forEach((li, i) => li.classList.toggle("current", i === current));
  document.body.dataset.step = String(current);
}

function go(i) {
  current = Math.max(0, Math.min(n - 1, i));
  if (location.hash !== "#" + current) history.replaceState(null, "", "#" + current);
  render();
}
document.getElementById("first").addEventListener("click", () => go(0));
document.getElementById("prev").addEventListener("click", () => go(current - 1));
document.getElementById("next").addEventListener("click", () => go(current + 1));
document.getElementById("last").addEventListener("click", () => go(n - 1));
document.addEventListener("keydown", e => {
  const to = {ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: n - 1}[e.key];
  if (to !== undefined) { e.preventDefault(); go(to); }
});
const start = parseInt(location.hash.slice(1), 10);
go(Number.isFinite(start) ? start : 0);
"""
