"""``isrcheck list``: protocol versions, built in, from plugins or a team's files, as data and as text.

Each entry says what a version is in its own words: a ``summary`` or ``references`` a version only inherits is
marked with the version it comes from (``summary_from``, ``references_from``), so a variant never passes off
its parent's. ``--brief`` gives one line a spec: its name, the distinct states at its defaults when a complete
search recorded them (checker/command_line/state_counts.py), its expected violations, and its summary.
"""
from __future__ import annotations

from isrcheck.checker.command_line import state_counts
from isrcheck.checker.command_line.registry import reference
from isrcheck.checker.command_line.variants import own
from isrcheck.model.configuration import configurations


def entry(cls):
    """What ``list --format json`` says of a spec class."""
    summary, summary_from = own(cls, "summary")
    references, references_from = own(cls, "references")
    live, live_why = cls.liveness_expected()
    return {
        "spec": cls.name, "reference": reference(cls), "summary": summary, "summary_from": summary_from,
        "references": list(references), "references_from": references_from,
        "default_bounds": dict(cls.defaults), "default_states": state_counts.recall(cls),
        "bounds": {n: {"default": b.default, "lo": b.lo, "hi": b.hi, "kind": b.kind, "doc": b.doc}
                   for n, b in cls.bound_declarations().items()},
        "expected": dict(cls.expected),
        "expected_why": dict(cls.expected_why),
        "configurations": [{"name": n, "bounds": dict(c.bounds), "expected": dict(c.expected),
                            "liveness": dict(c.liveness), "why": dict(c.why)}
                           for n, c in configurations(cls).items()],
        "not_modelled": dict(cls.not_modelled),
        "invariants": {n: {"meaning": i.meaning, "loss": i.loss} for n, i in cls.declared_invariants().items()},
        "properties": {n: {"meaning": meaning, "fairness": [str(f) for f in fairness],
                           "expected": live.get(n), "expected_why": live_why.get(n)}
                       for n, (meaning, fairness) in cls.declared_properties().items()},
    }


def _inherited(text, source):
    return f"{text} [dim](inherited from {source})[/]" if source else text


def print_full(console, entries):
    """Each spec: summary, references, bounds and options, its invariants and properties with their expected
    verdicts, its configurations and what it does not model."""
    from rich.markup import escape
    from rich.table import Table
    for e in entries:
        console.rule(f"[bold cyan]{escape(e['spec'])}[/]", align="left")
        if e["reference"] != e["spec"]:
            console.print(f"[dim]named as:[/] {escape(e['reference'])}")
        console.print(_inherited(escape(e["summary"]), e["summary_from"]))
        console.print(_inherited(f"[dim]references:[/] {escape('; '.join(e['references']))}", e["references_from"]))
        console.print(f"[dim]default bounds:[/] {' '.join(f'{k}={v}' for k, v in e['default_bounds'].items())}"
                      + (f" [dim]({e['default_states']:,} states)[/]" if e["default_states"] else ""))
        options = [f"{k} {b['lo']}..{b['hi']}" + (f": {b['doc']}" if b["doc"] else "")
                   for k, b in e["bounds"].items() if b["kind"] == "option"]
        if options:
            console.print("[dim]options (--set KEY=VALUE):[/] " + escape("; ".join(options)), soft_wrap=True)
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("invariant")
        table.add_column("expected")
        table.add_column("meaning")
        for inv, info in e["invariants"].items():
            why = e["expected_why"].get(inv)
            expected = e["expected"].get(inv, "-")
            table.add_row(escape(inv), escape(f"{expected}" + (f" — {why}" if why else "")), escape(info["meaning"]))
        for prop, info in e["properties"].items():
            expected = info["expected"] or "-"
            table.add_row(escape(f"{prop} (liveness)"),
                          escape(expected + (f" — {info['expected_why']}" if info["expected_why"] else "")),
                          escape(f"{info['meaning']} Fairness: {', '.join(info['fairness'])}."))
        console.print(table)
        for c in e["configurations"][1:]:
            console.print(f"[dim]configuration[/] [bold]{escape(c['name'])}[/]: " + escape(
                " ".join(f"{k}={v}" for k, v in c["bounds"].items()) + " → "
                + "; ".join(f"{inv} {v}" + (f" — {c['why'][inv]}" if inv in c["why"] else "")
                            for inv, v in {**c["expected"], **c["liveness"]}.items())), soft_wrap=True)
        for ticket, why in e["not_modelled"].items():
            console.print(f"[dim]not modelled[/] {escape(ticket)}: {escape(why)}", soft_wrap=True)


VIOLATIONS_WIDTH = 60       # the expected-violations column of --brief; list SPEC names every one


def _first_names(names, width):
    """``a, b, c`` cut to the names that fit ``width`` and a count of the rest (``none`` if there are none)."""
    shown = []
    for i, name in enumerate(names):
        more = f" (+{len(names) - i - 1} more)" if i < len(names) - 1 else ""
        if shown and len(", ".join(shown + [name])) + len(more) > width:
            return ", ".join(shown) + f" (+{len(names) - len(shown)} more)"
        shown.append(name)
    return ", ".join(shown) or "none"


def print_brief(console, entries):
    """One line a spec: name, distinct states at its defaults (when recorded), expected violations, and as much of
    its summary as the width leaves."""
    rows = []
    for e in entries:
        violated = [n for n, v in e["expected"].items() if v == "violated"]
        violated += [f"{n} (liveness)" for n, info in e["properties"].items() if info["expected"] == "violated"]
        summary = e["summary"] + (f" (inherited from {e['summary_from']})" if e["summary_from"] else "")
        rows.append((e["reference"], f"{e['default_states']:,}" if e["default_states"] else "-",
                     _first_names(violated, VIOLATIONS_WIDTH), " ".join(summary.split())))
    header = ("spec", "states", "expected violations", "summary")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]
    for row in [header] + rows:
        line = f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:<{widths[2]}}  "
        room = max(console.width - len(line), 20)
        summary = row[3] if len(row[3]) <= room else row[3][:room - 1] + "…"
        console.print(line + summary, soft_wrap=True, markup=False, highlight=False,
                      style="bold" if row is header else None)
    if any(not e["default_states"] for e in entries):
        console.print("states: distinct states at the default bounds, once a complete check or the gate has "
                      "counted them with these sources ('-' until then)", style="dim", soft_wrap=True, markup=False)
