"""The gate's reports: a rich table for people, JSON, JUnit XML and SARIF 2.1.0 for CI, and a Markdown
summary for GitHub Actions (``$GITHUB_STEP_SUMMARY``)."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from rich.table import Table

from isrcheck.checker import __version__
from isrcheck.checker.traces import show as show_mod
from isrcheck.checker.gating.gate_results import (EXIT_MET, EXIT_STOPPED, EXIT_UNMET, NOT_NEEDED, REPLAYS, label,
                                                  show_command)
from isrcheck.model.configuration import DEFAULTS
from isrcheck.model.present import step_label


STYLE = {"holds": "green", "violated": "red", "unknown": "yellow"}


def print_table(console, report):
    """The gate's rich table and, under it, what is unmet and where the counterexamples are."""
    table = Table(title=f"isrcheck {__version__} gate", title_justify="left", header_style="bold")
    for col, just in (("spec", "left"), ("invariant", "left"), ("expected", "left"), ("got", "left"),
                      ("states", "right"), ("depth", "right"), ("seconds", "right"), ("saved trace", "left"),
                      ("", "left")):
        table.add_column(col, justify=just)
    last = None
    for i, r in enumerate(report.rows):
        first = r.label != last
        last = r.label
        trace = {REPLAYS: "[green]replays[/]", NOT_NEEDED: "[dim]-[/]"}.get(r.trace_status,
                                                                           f"[bold red]{r.trace_status}[/]")
        got = f"[{STYLE.get(r.got, '')}]{r.got}[/]"
        mark = "[green]✓[/]" if r.ok else "[bold red]✗ unmet[/]"
        end = i + 1 < len(report.rows) and report.rows[i + 1].label != r.label
        table.add_row(show_mod.markup_safe(r.label) if first else "", show_mod.markup_safe(r.invariant),
                      show_mod.markup_safe(r.expected), got,
                      f"{r.states:,}" if first else "", str(r.depth) if first else "",
                      f"{r.seconds:.1f}" if first else "", trace, mark, end_section=end)
    if report.rows:
        console.print(table)
    if report.changed_since is not None:
        console.print(f"changed since {report.changed_since}: {len(report.changed_files or [])} files; "
                      f"skipped {len(report.skipped)} unaffected specs"
                      + (f" ({show_mod.markup_safe(', '.join(report.skipped))})" if report.skipped else ""))
        for why in report.changed_why:
            console.print(f"  checked: {show_mod.markup_safe(why)}", soft_wrap=True)
    for (name, conf), never in report.never_fired.items():
        if never:
            never = show_mod.markup_safe(f"{label(name, conf)}: never fired: {', '.join(never)}")
            console.print(f"[yellow]{never}[/] "
                          "(a guard too strong, or bounds too small?)")
    for r in report.unmet:
        console.print(f"[bold red]✗ {show_mod.markup_safe(f'{r.label} {r.invariant}')}:[/] "
                      f"{show_mod.markup_safe('; '.join(r.problems()))}",
                      soft_wrap=True)
        if r.counterexample:
            console.print(f"  counterexample ({r.steps} states): "
                          f"[bold]{show_mod.markup_safe(show_command(report, r))}[/]", soft_wrap=True)
    if report.stopped:
        console.print(f"[yellow]gate stopped:[/] {show_mod.markup_safe(report.headline())} in {report.seconds:.1f} s",
                      soft_wrap=True)
        return
    colour = "green" if report.ok else "bold red"
    console.print(f"[{colour}]gate {'passed' if report.ok else 'FAILED'}:[/] {show_mod.markup_safe(report.headline())} "
                  f"in {report.seconds:.1f} s")


def as_json(report):
    return {
        "tool": "isrcheck", "version": __version__, "ok": report.ok,
        "stopped": report.stopped, "seconds": round(report.seconds, 3),
        "summary": report.headline(),
        "changed_since": report.changed_since, "changed_files": report.changed_files,
        "changed_why": report.changed_why,
        "specs": {name: {"bounds": dict(spec.bounds), "never_fired": report.never_fired.get((name, conf), []),
                         "configurations": {c: {"bounds": dict(other.bounds),
                                                "never_fired": report.never_fired.get((n, c), [])}
                                            for (n, c), other in report.specs.items() if n == name}}
                  for (name, conf), spec in report.specs.items() if conf == DEFAULTS},
        "skipped": report.skipped,
        "results": [r.as_json() for r in report.rows],
    }


def as_junit(report):
    """JUnit XML: a testsuite per (spec, configuration), named like the table (``spec`` for the defaults,
    ``spec/configuration`` else), a testcase per expectation, a failure per unmet one."""
    suites = ET.Element("testsuites", name="isrcheck gate", tests=str(len(report.rows)),
                        failures=str(len(report.unmet)), errors="0", time=f"{report.seconds:.3f}")
    for (name, conf), spec in report.specs.items():
        rows = [r for r in report.rows if (r.spec, r.configuration) == (name, conf)]
        seconds = rows[0].seconds if rows else 0.0
        suite = ET.SubElement(suites, "testsuite", name=label(name, conf), tests=str(len(rows)),
                              failures=str(sum(not r.ok for r in rows)), errors="0", skipped="0",
                              time=f"{seconds:.3f}")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="configuration", value=conf)
        for k, v in spec.bounds.items():
            ET.SubElement(props, "property", name=k, value=str(v))
        for r in rows:
            case = ET.SubElement(suite, "testcase", classname=r.label, name=r.invariant, time="0")
            if not r.ok:
                failure = ET.SubElement(case, "failure", type=r.kind, message="; ".join(r.problems()))
                lines = [f"spec {name}, configuration {conf}, invariant {r.invariant}: expected {r.expected}, "
                         f"got {r.got}",
                         f"{r.states} distinct states, depth {r.depth}"]
                if r.expected == "violated":
                    lines.append(f"saved counterexample {r.saved_trace}: {r.trace_status} ({r.trace_message})")
                if r.counterexample:
                    lines.append(f"counterexample ({r.steps} states): {show_command(report, r)}")
                failure.text = "\n".join(lines)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


SARIF_RULES = {
    "unexpected-violation": "An invariant the protocol version must satisfy is violated at the bounds of one of its "
                            "configurations (its defaults or a named one).",
    "expected-violation-not-found": "An invariant the protocol version must violate (a known bug) now holds: "
                                    "the model or the checker lost its bite.",
    "counterexample-does-not-replay": "The saved counterexample of an expected violation no longer replays on "
                                      "the current model.",
    "counterexample-missing": "An expected violation has no saved counterexample.",
    "counterexample-at-other-bounds": "The saved counterexample of an expected violation was found at other bounds "
                                      "than its configuration declares.",
    "inconclusive": "The search did not reach a verdict.",
}


def _uri(path):
    """A path as a SARIF artifact URI: relative to the working directory when under it."""
    path = os.path.abspath(path)
    rel = os.path.relpath(path, os.getcwd())
    if not rel.startswith(".."):
        return {"uri": rel.replace(os.sep, "/"), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + path.replace(os.sep, "/")}


def as_sarif(report):
    """SARIF 2.1.0: one run, one result per unmet expectation."""
    rules = [{"id": rid, "name": rid.replace("-", " "), "shortDescription": {"text": text},
              "fullDescription": {"text": text}, "defaultConfiguration": {"level": "error"}}
             for rid, text in SARIF_RULES.items()]
    index = {rid: i for i, rid in enumerate(SARIF_RULES)}
    results = []
    for r in report.unmet:
        source, line = report.sources.get(r.spec, (None, None))
        locations = []
        if r.kind in ("counterexample-does-not-replay", "counterexample-at-other-bounds") and r.saved_trace \
                and os.path.exists(r.saved_trace):
            locations.append({"physicalLocation": {"artifactLocation": _uri(r.saved_trace)}})
        elif source:
            locations.append({"physicalLocation": {"artifactLocation": _uri(source),
                                                   "region": {"startLine": line or 1}}})
        result = {"ruleId": r.kind, "ruleIndex": index[r.kind], "level": "error",
                  "message": {"text": f"{r.label}: " + "; ".join(r.problems())},
                  "locations": locations,
                  "properties": {"spec": r.spec, "configuration": r.configuration, "invariant": r.invariant,
                                 "expected": r.expected, "got": r.got,
                                 "savedTrace": r.trace_status}}
        if r.counterexample:
            result["relatedLocations"] = [{"id": 1, "physicalLocation": {"artifactLocation": _uri(r.counterexample)},
                                           "message": {"text": f"counterexample, {r.steps} states"}}]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            # no informationUri: it is optional, and isrcheck has no public address to give
            "tool": {"driver": {"name": "isrcheck", "version": __version__, "semanticVersion": __version__,
                                "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + os.getcwd().replace(os.sep, "/") + "/"}},
            "invocations": [{"executionSuccessful": not report.stopped,
                             "exitCode": EXIT_STOPPED if report.stopped else EXIT_MET if report.ok else EXIT_UNMET}],
            "results": results,
        }],
    }


def _md(text):
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_row(cells):
    return "| " + " | ".join(cells) + " |"


def _changes(spec, f, before, after, axes, index=""):
    """``name[i]=value`` for the elements of a field that changed (a whole replica set counts as one)."""
    if before == after:
        return []
    replica_set = len(axes) == 1 and f.boolean and tuple(axes) == ("replica",)
    if isinstance(after, list) and isinstance(before, list) and len(before) == len(after) and not replica_set:
        out = []
        for i, (b, a) in enumerate(zip(before, after)):
            label = f"r{i}" if axes[:1] == ("replica",) else str(i)
            out += _changes(spec, f, b, a, tuple(axes[1:]), f"{index}[{label}]")
        return out
    return [f"{f.name}{index}={spec.presentation.fmt_value(f, after, len(f.shape) - len(axes))}"]


def markdown_steps(spec, trace):
    """A trace as a Markdown table: a row per replica per step (its log, and the columns the spec's
    presentation leads with), and the step's other changes; changed cells in bold."""
    present = spec.presentation
    per_replica, partition = present.table_fields()
    lead = [f for f in per_replica if f.name in present.columns]
    rest = [f for f in per_replica if f not in lead]
    head = (["step", "action", "replica", present.log_header] + [present.header(f) for f in lead]
            + ["other changes"])
    lines = [_md_row(head), _md_row(["---"] * len(head))]

    def cell(text, changed):
        text = _md(text)
        return f"**{text}**" if changed and text else text

    prev = None
    for i, (name, params, state) in enumerate(trace.steps):
        label = step_label(name, params)
        for r in range(present.R):
            log = present.log_text(state, r)
            row = [str(i) if r == 0 else "", f"`{label}`" if r == 0 else "", f"r{r}",
                   cell(log if log is not None else "", prev is not None and present.log_text(prev, r) != log)]
            for f in lead:
                v = state[f.name][r]
                row.append(cell(present.fmt_value(f, v, 1), prev is not None and prev[f.name][r] != v))
            other = []
            if prev is not None:
                for f in rest:
                    other += _changes(spec, f, prev[f.name][r], state[f.name][r], tuple(f.axes[1:]))
                if r == 0:
                    for f in partition:
                        other += _changes(spec, f, prev[f.name], state[f.name], tuple(f.axes))
            row.append(_md(" ".join(other)))
            lines.append(_md_row(row))
        prev = state
    return "\n".join(lines)


def as_markdown(report):
    """The GitHub Actions step summary: verdict, unmet expectations, counterexamples as tables, all results."""
    icon = "✅" if report.ok else "❌"
    out = [f"## {icon} isrcheck gate: {report.headline()}", ""]
    if report.changed_since is not None:
        out += [f"Changed since `{report.changed_since}`: {len(report.changed_files or [])} files; checked "
                + (", ".join(f"`{label(*key)}`" for key in report.specs) or "no spec")
                + (f"; skipped {len(report.skipped)} unaffected specs." if report.skipped else "."), ""]
        out += [f"- {_md(why)}" for why in report.changed_why] + ([""] if report.changed_why else [])
    head = ["spec", "invariant", "expected", "got", "states", "depth", "seconds", "saved trace", ""]

    def table(rows):
        lines = [_md_row(head), _md_row(["---"] * len(head))]
        for r in rows:
            lines.append(_md_row([f"`{r.label}`", f"`{r.invariant}`", r.expected,
                                  r.got if r.verdict_ok else f"**{r.got}**", f"{r.states:,}", str(r.depth),
                                  f"{r.seconds:.1f}", _md(r.trace_status), "✅" if r.ok else "❌ unmet"]))
        return lines

    if report.unmet:
        out += ["### Unmet expectations", ""] + table(report.unmet) + [""]
        for r in report.unmet:
            out += [f"- `{r.label}` `{r.invariant}`: " + _md("; ".join(r.problems()))]
        out.append("")
    for (name, conf, inv), trace in report.traces.items():
        r = next(r for r in report.rows if (r.spec, r.configuration, r.invariant) == (name, conf, inv))
        if r.expected != "holds":
            continue                    # fresh traces of expected violations: attached, not shown
        spec = report.specs[name, conf]
        meaning = spec.presentation.meaning(inv)
        loss = spec.invariants[inv].loss
        out += [f"### ❌ `{r.label}`: `{inv}` violated ({len(trace.steps)} states)", "",
                f"> {_md(meaning)}" + (f" {_md(loss)}" if loss else ""), "",
                f"Bounds: {' '.join(f'{k}={v}' for k, v in spec.bounds.items())}. Written to "
                f"`{r.counterexample}` (in the job's artifacts); read it with `{show_command(report, r)}`.",
                "", markdown_steps(spec, trace), "",
                f"`{inv}` is violated at step {len(trace.steps) - 1}.", ""]
    if report.rows:
        out += ["<details><summary>All results</summary>", ""] + table(report.rows) + ["", "</details>", ""]
    return "\n".join(out) + "\n"
