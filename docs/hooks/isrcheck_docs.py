"""MkDocs hook: the parts of the documentation that isrcheck's own declarations state.

A page writes a marker where a generated part goes, an HTML comment on a line of its own::

    <!-- isrcheck: known-bugs -->

and this hook replaces it, at every build, from what the installed isrcheck declares: ``isrcheck list
--format json`` (summaries, references, bounds, expected verdicts, configurations, liveness expectations,
what is not modelled), the spec classes (family, the version each builds on, version flags), the family
modules' docstrings (their departures from Kafka) and the saved traces under ``counterexamples/``. So
these tables cannot drift from the code: a new spec, configuration or departure appears by itself.
An unknown marker fails the build.

The hook also gives mkdocstrings a view of the ``isrcheck`` package as installed (``api/`` is
``isrcheck``, ``model/`` is ``isrcheck.model``, ...: pyproject.toml's package-dir), because griffe
reads an editable install's top-level folder only.
"""
from __future__ import annotations

import atexit
import inspect
import json
import pkgutil
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

from mkdocs.plugins import event_priority

try:
    import tomllib
except ModuleNotFoundError:                     # Python 3.10
    import tomli as tomllib

MARKER = re.compile(r"^<!--[ \t]*isrcheck:[ \t]*([\w-]+)[ \t]*-->[ \t]*$", re.M)
ROOT = Path(__file__).resolve().parents[2]


# ---- the data ---------------------------------------------------------------------------------------------

@cache
def listing():
    """``isrcheck list --format json``, as the command prints it, keyed by spec name."""
    from click.testing import CliRunner
    from isrcheck.checker.command_line.cli import cli
    run = CliRunner().invoke(cli, ["list", "--format", "json"], catch_exceptions=False)
    if run.exit_code != 0:
        raise RuntimeError(f"isrcheck list --format json exited {run.exit_code}: {run.output}")
    return {entry["spec"]: entry for entry in json.loads(run.stdout) if entry["spec"] in classes()}


@cache
def classes():
    """The built-in specs (installed plugins are the user's, not isrcheck's documentation)."""
    from isrcheck.specs import SPECS
    return dict(SPECS)


def family_of(cls):
    """The family a version belongs to: the nearest class that names the traces' presentation."""
    return next(k for k in cls.__mro__ if "presentation_class" in vars(k))


def parent_of(cls):
    registered = set(classes().values())
    return next((k for k in cls.__mro__[1:] if k in registered), None)


def families():
    """Each family with its versions, in the registry's order."""
    out = {}
    for name, cls in classes().items():
        out.setdefault(family_of(cls), []).append(name)
    return out


def family_title(fam):
    doc = (inspect.getmodule(fam).__doc__ or "").strip().splitlines()
    title = doc[0].rstrip(".") if doc else fam.__name__
    return f"{title}: `{fam.__module__}.{fam.__name__}`"


def effective_bounds(spec, config):
    return {**listing()[spec]["default_bounds"], **config["bounds"]}


def trace_states(spec, config, name):
    """The saved trace's length in states, or None when there is none."""
    folder = ROOT / "counterexamples" / spec
    if config != "defaults":
        folder = folder / config
    path = folder / f"{name}.itf.json"
    try:
        return len(json.loads(path.read_text())["states"])
    except (OSError, ValueError, KeyError):
        return None


def benign(spec, invariant):
    inv = classes()[spec].declared_invariants().get(invariant)
    return inv is not None and inv.benign


# ---- rendering helpers ------------------------------------------------------------------------------------

def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def bounds_text(bounds):
    """Bounds as ``key=value`` words."""
    return " ".join(f"`{k}={v}`" for k, v in bounds.items()) or "the spec's defaults"


def docstring_markdown(text):
    """A docstring's bulleted paragraph as Markdown: a blank line before the list, continuation lines joined."""
    out, item = [], None
    for line in text.splitlines():
        if line.startswith("- "):
            if item is not None:
                out.append(item)
            elif out:
                out.append("")
            item = line
        elif item is not None:
            item += " " + line.strip()
        else:
            out.append(line)
    if item is not None:
        out.append(item)
    return "\n".join(out)


# ---- the generated parts ----------------------------------------------------------------------------------

def by_family(render):
    """One section per family: its title and what ``render(family, its version names)`` gives (None: no section)."""
    parts = []
    for fam, names in families().items():
        body = render(fam, names)
        if body:
            parts.append(f"### {family_title(fam)}\n\n{body}")
    return "\n\n".join(parts)


def versions():
    def render(fam, names):
        rows = [(f"`{name}`", f"`{parent.name}`" if parent else "-", listing()[name]["summary"],
                 "; ".join(listing()[name]["references"]))
                for name, parent in ((n, parent_of(classes()[n])) for n in names)]
        return table(("spec", "builds on", "what it is", "references"), rows)
    return by_family(render)


def bounds():
    def render(fam, names):
        rows = [(f"`--{n.replace('_', '-')}`" if b.kind == "bound" else f"`--set {n}=N`", b.default, f"{b.lo}..{b.hi}",
                 b.doc) for n, b in fam.bound_declarations().items()]
        return table(("flag", "family default", "range", "meaning"), rows)
    return by_family(render)


def invariants():
    def render(fam, names):
        rows = [(f"`{n}`" + (" (benign)" if i.benign else ""), i.meaning, i.loss or "")
                for n, i in fam.declared_invariants().items()]
        return table(("invariant", "meaning", "when it breaks"), rows)
    return by_family(render)


def properties():
    def render(fam, names):
        rows = [(f"`{n}`", meaning, ", ".join(f"`{f}`" for f in fairness))
                for n, (meaning, fairness) in fam.declared_properties().items()]
        return rows and table(("property", "meaning", "fairness"), rows)
    return by_family(render)


def expectations(config):
    """A configuration's expected verdicts, of invariants and of liveness properties (named configurations)."""
    return {**config["expected"], **(config.get("liveness", {}) if config["name"] != "defaults" else {})}


def known_bugs():
    """Every expected violation (benign ones aside) with the configurations that hold at the same bounds; liveness
    expectations of named configurations too (the defaults' are liveness_verdicts's)."""
    holds_at = {}
    for spec, entry in listing().items():
        for config in entry["configurations"]:
            key = tuple(sorted(effective_bounds(spec, config).items()))
            for inv, verdict in expectations(config).items():
                if verdict == "holds":
                    holds_at.setdefault((key, inv), []).append(f"`{spec}` / `{config['name']}`")
    rows = []
    for spec, entry in listing().items():
        for config in entry["configurations"]:
            key = tuple(sorted(effective_bounds(spec, config).items()))
            for inv, verdict in expectations(config).items():
                if verdict != "violated" or benign(spec, inv):
                    continue
                states = trace_states(spec, config["name"], inv)
                fixed = [f for f in holds_at.get((key, inv), []) if not f.startswith(f"`{spec}`")]
                rows.append((f"`{spec}` / `{config['name']}`", bounds_text(config["bounds"]),
                             f"`{inv}`" + (f": {states} states" if states else ""),
                             config["why"].get(inv, ""), ", ".join(fixed) or "-"))
    return table(("spec / configuration", "bounds (beyond the spec's defaults)",
                  "invariant or property: saved trace",
                  "why (as declared)", "holds at the same bounds"), rows)


def liveness_verdicts():
    names = [n for n, e in listing().items() if any(p["expected"] for p in e["properties"].values())]
    props = list(dict.fromkeys(p for n in names for p in listing()[n]["properties"]))
    rows = []
    for name in names:
        entry = listing()[name]
        row = [f"`{name}`"]
        for prop in props:
            info = entry["properties"].get(prop)
            verdict = (info or {}).get("expected")
            if verdict == "violated":
                states = trace_states(name, "defaults", prop)
                verdict += f" ({states}-state lasso)" if states else ""
            row.append(verdict or "-")
        rows.append(row)
    return table(["spec"] + [f"`{p}`" for p in props], rows)


def liveness_reasons():
    rows = []
    for name, entry in listing().items():
        for prop, info in entry["properties"].items():
            if info["expected"] and info["expected_why"]:
                rows.append((f"`{name}`", f"`{prop}`", info["expected"], info["expected_why"]))
    return table(("spec", "property", "expected", "why (as declared)"), rows)


def not_modelled():
    rows = [(f"`{name}`", ticket, why) for name, entry in listing().items()
            for ticket, why in entry["not_modelled"].items()]
    return table(("spec", "ticket", "why it is not modelled (as declared)"), rows) if rows else "None."


def _modules(package):
    yield package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        yield __import__(info.name, fromlist=["_"])


def departures():
    """The paragraph of each model and spec module docstring that lists where it departs from Kafka."""
    import isrcheck.model
    import isrcheck.specs
    parts = []
    for package in (isrcheck.model, isrcheck.specs):
        for module in _modules(package):
            doc = inspect.cleandoc(module.__doc__ or "")
            for paragraph in re.split(r"\n\s*\n", doc):
                if re.search(r"\bdepart", paragraph.splitlines()[0] if paragraph else "", re.I):
                    title = doc.splitlines()[0].rstrip(".")
                    parts.append(f"### {title} (`{module.__name__}`)\n\n{docstring_markdown(paragraph)}")
    if not parts:
        raise RuntimeError("no module docstring lists departures from Kafka")
    return "\n\n".join(parts)


def _flag_docs(cls):
    """Class attributes documented with ``#:`` comments, with their comment text."""
    source, _ = inspect.getsourcelines(cls)
    docs, comment = {}, []
    for line in source:
        stripped = line.strip()
        if stripped.startswith("#:"):
            comment.append(stripped[2:].strip())
            continue
        match = re.match(r"(\w+)\s*=", stripped)
        if match and comment:
            docs[match.group(1)] = " ".join(comment)
        comment = []
    return docs


def version_flags():
    def render(fam, names):
        flags = {}
        for k in reversed(fam.__mro__):
            if "presentation_class" in vars(k):
                flags.update({n: d for n, d in _flag_docs(k).items() if isinstance(getattr(fam, n, None), bool)})
        if not flags:
            return None
        rows = [[f"`{name}`"] + ["yes" if getattr(classes()[name], flag) else "-" for flag in flags] for name in names]
        return (table(("flag", "meaning"), [(f"`{n}`", d) for n, d in flags.items()]) + "\n\n"
                + table(["spec"] + [f"`{f}`" for f in flags], rows))
    return by_family(render)


PARTS = {"versions": versions, "bounds": bounds, "invariants": invariants, "properties": properties,
         "known-bugs": known_bugs, "liveness-verdicts": liveness_verdicts, "liveness-reasons": liveness_reasons,
         "not-modelled": not_modelled, "departures": departures, "version-flags": version_flags}


# ---- MkDocs events ----------------------------------------------------------------------------------------

def package_view(root):
    """A folder holding ``isrcheck`` as it installs (symbolic links into the repository), for griffe."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    view = Path(tempfile.mkdtemp(prefix="isrcheck-docs-"))
    atexit.register(shutil.rmtree, view, ignore_errors=True)
    for package, folder in sorted(mapping.items(), key=lambda kv: kv[0].count(".")):
        target = view.joinpath(*package.split("."))
        if target.exists() or target.parent.is_symlink():
            continue                                  # inside a folder already linked
        if "." not in package:
            target.mkdir()
            for entry in (root / folder).iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        else:
            target.symlink_to(root / folder, target_is_directory=True)
    return view


@event_priority(100)           # before mkdocstrings' own on_config, which may start the handler
def on_config(config):
    handlers = config.plugins["mkdocstrings"].config.handlers
    python = handlers.setdefault("python", {})
    python["paths"] = [str(package_view(ROOT))]
    return config


def on_page_markdown(markdown, page, config, files):
    def generated(match):
        name = match.group(1)
        if name not in PARTS:
            raise ValueError(f"{page.file.src_path}: unknown marker <!-- isrcheck: {name} --> "
                             f"(known: {', '.join(PARTS)})")
        return f"\n{PARTS[name]()}\n"
    return MARKER.sub(generated, markdown)
