"""Engines that know no Kafka: the protocol's vocabulary lives in declarations (unbounded fields, fuzz
targets, replica axes) and in one presentation per protocol family; a fast ``list``."""
from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import tokenize

import numpy as np
import pytest

from isrcheck.checker.fuzzing.fuzz import _targets, target_counts
from isrcheck.checker.traces.trace import load, spec_for
from isrcheck.model.expr import DeclarationError
from isrcheck.model.kafka import KafkaReplication
from isrcheck.model.kafka_present import KafkaPresentation
from isrcheck.model.kraft_present import KRaftPresentation
from isrcheck.model.layout import Field
from isrcheck.model.spec import DECLARED, RESERVED, Bound, Spec, action, invariant
from isrcheck.specs import SPECS
from isrcheck.specs.tla.present import TlaPresentation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = [sys.executable, "-m", "isrcheck.checker.command_line.cli"]
ENGINES = ["exhaustive/bfs", "spark/spark_engine", "symbolic/bmc", "symbolic/cnf", "symbolic/induction",
           "symbolic/unrolling", "symbolic/strengthen", "fuzzing/fuzz", "traces/minimize",
           "traces/shortcuts", "traces/trace",
           "gating/gate", "gating/gate_changes", "gating/gate_run", "gating/gate_results", "gating/gate_formats",
           "engine/result", "command_line/cli", "traces/show", "traces/export", "command_line/report",
           "exhaustive/fingerprint", "exhaustive/visited", "exhaustive/coverage", "traces/itf_types",
           "command_line/settings", "fuzzing/fuzz_hints", "fuzzing/fuzz_cells", "fuzzing/fuzz_workers",
           "fuzzing/fuzzer", "spark/spark_kernels", "spark/spark_visited"]
EVERY_OPTION = dict(controller_failover=1, async_isr=1, elr=1, fetch_response_loss=1, proof_ghosts=1,
                    eligibility_lag=1, fetch_responses=1)


def run(*args):
    return subprocess.run(CLI + list(args), capture_output=True, text=True)


def _kafka_vocabulary():
    """Every field and action name of the Kafka model's specs, with every option on."""
    names = set()
    for cls in SPECS.values():
        if issubclass(cls, KafkaReplication):
            # every option the spec allows; reassignment is not modelled with a controller failover: a spec that
            # reassigns at its defaults turns its options on without it (its own defaults name the reassignment's
            # fields)
            every = {k: v for k, v in EVERY_OPTION.items() if k in cls.limits and cls.limits[k][1] >= v}
            every.update({"reassignments": 0} if cls.defaults.get("reassignments") else {})
            for spec in (cls(), cls(**every)):
                names |= set(spec.layout.fields) | {a.name for a in spec.actions}
    return names


def test_engines_name_no_field_or_action_of_the_kafka_model():
    names = _kafka_vocabulary()
    assert {"q_epoch", "leo", "up", "log_epoch", "elect_leader", "fetch", "crash"} <= names
    distinctive = {n for n in names if "_" in n} | {"leo"}
    found = []
    for module in ENGINES:
        path = os.path.join(ROOT, "checker", f"{module}.py")
        src = open(path, encoding="utf-8").read()
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.NAME and tok.string in names:
                found.append(f"{module}.py:{tok.start[0]} {tok.string}")
            elif tok.type == tokenize.STRING:
                try:
                    value = ast.literal_eval(tok.string)
                except (ValueError, SyntaxError):
                    continue
                if value in names:
                    found.append(f"{module}.py:{tok.start[0]} {tok.string}")
        for n in distinctive:                     # also in comments and docstrings
            found += [f"{module}.py {n} (text)" for _ in re.finditer(rf"\b{n}\b", src)]
    assert not found


def test_a_renamed_action_fails_loudly_instead_of_degrading_show():
    """fetch renamed in the family's base class (the class naming the presentation) without its narration."""
    class Renamed(KafkaReplication):
        presentation_class = KafkaPresentation
        fetch = None

        @action(f="REPLICAS", l="REPLICAS")
        def follower_fetch(self, s, f, l):
            KafkaReplication.fetch(self, s, f, l)

    class Version(Renamed):
        name = "renamed"

    with pytest.raises(DeclarationError, match="action follower_fetch: KafkaPresentation does not narrate it"):
        Version()


def test_each_family_narrates_exactly_the_actions_its_specs_declare():
    declared = {}
    for cls in SPECS.values():
        declared.setdefault(cls.presentation_class, set()).update(n for n, _ in cls._members("__isrcheck_action__"))
    assert set(declared) == {KafkaPresentation, KRaftPresentation, TlaPresentation}
    for presentation, names in declared.items():
        assert presentation.narrated == names, presentation.__name__


def _run_batch(trace, spec):
    return np.array([spec.layout.encode(state) for _, _, state in trace.steps])


def _moves(states, field):
    return sum(1 for a, b in zip(states, states[1:]) if a[field] != b[field])


def _drops(states, field):
    flat = [np.ravel(np.asarray(s[field], dtype=int)) for s in states]
    return int(sum(np.maximum(a - b, 0).astype(bool).sum() for a, b in zip(flat, flat[1:])))


@pytest.mark.parametrize("path, expect", [
    ("tla-kip101/strong-isr.itf.json", {"leader changes": "q_leader_epoch", "truncations": "log_end_offset",
                                        "ISR shrinks": "q_isr"}),
    ("kip-101/no-committed-loss.itf.json", {"leader changes": "q_epoch", "truncations": "leo", "crashes": "up"}),
])
def test_fuzz_targets_count_the_declared_events_of_each_family(path, expect):
    trace = load(os.path.join(ROOT, "counterexamples", path))
    spec = spec_for(trace)
    counts = dict(zip([t.label for t in spec.fuzz_targets], target_counts(_targets(spec), _run_batch(trace, spec))))
    states = [state for _, _, state in trace.steps]
    assert list(counts) == list(expect)
    assert counts["leader changes"] == _moves(states, expect["leader changes"]) > 0
    assert counts["truncations"] == _drops(states, expect["truncations"]) > 0
    for label in set(expect) - {"leader changes", "truncations"}:
        assert counts[label] == _drops(states, expect[label])


def test_every_spec_declares_fuzz_targets_and_its_replicas_by_axes():
    for name, cls in SPECS.items():
        spec = cls()
        assert spec.fuzz_targets, name
        assert spec.layout.replicas == spec.R == spec.bounds["replicas"], name


def test_unbounded_fields_are_the_epochs_and_ids_and_nothing_the_protocol_bounds():
    spec = SPECS["kip-320"](**{k: v for k, v in EVERY_OPTION.items() if k in SPECS["kip-320"].defaults})
    unbounded = {f.name for f in spec.layout.fields.values() if f.unbounded}
    assert {"log_epoch", "leader_epoch", "q_epoch", "log_record", "next_record", "applied_epoch"} <= unbounded
    assert not unbounded & {"leo", "hw", "crashes", "acked_at", "leader", "q_controller_epoch"}


def test_a_spec_is_checked_once_per_class_and_bounds():
    a, b, c = SPECS["kip-320"](), SPECS["kip-320"](), SPECS["kip-320"](max_epochs=2)
    assert a.actions is b.actions and a.invariants is b.invariants
    assert c.actions is not a.actions and len(c.actions) < len(a.actions)


def test_list_one_spec_matches_the_built_spec():
    r = run("list", "kip-320", "--format", "json")
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads(r.stdout)
    spec = SPECS["kip-320"]()
    assert entry["spec"] == "kip-320" and entry["default_bounds"] == spec.bounds
    assert list(entry["invariants"]) == list(spec.invariants)
    assert entry["invariants"]["no-committed-loss"]["meaning"] == spec.invariants["no-committed-loss"].meaning
    text = run("list", "tla-kip320").stdout
    assert "tla-kip320 " in text and "kip-101" not in text and "tla-kip101" not in text


def test_list_of_an_unknown_spec_exits_2_with_one_line():
    r = run("list", "kip-999")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "unknown spec 'kip-999'" in r.stderr and "Traceback" not in r.stderr


def test_show_reads_a_tla_trace_in_its_own_terms():
    path = os.path.join(ROOT, "counterexamples", "tla-kip101", "strong-isr.itf.json")
    r = run("show", path)
    assert r.returncode == 0, r.stderr
    assert "log (offset:id@epoch)" in r.stdout and "LEO" in r.stdout and "None" not in r.stdout
    assert "(BecomeFollowerTruncateKip101)" in r.stdout and "truncating its log 1→0" in r.stdout
    mermaid = run("show", "--format", "mermaid", path).stdout
    assert "Producer->>r0: 5. r0, presuming it leads, appends record 0 at offset 0" in mermaid
    assert "leo=None" not in run("show", "--format", "dot", path).stdout


HELPER_NAMES = '''
"""A team's KIP-101 whose helpers are named like what engines once called on a spec."""
from isrcheck.specs.kip_101 import Kip101


class Helpers(Kip101):
    name = "helpers"

    def holds(self, *args):
        raise AssertionError("an engine called the spec's own holds()")

    def step(self, *args):
        raise AssertionError("an engine called the spec's own step()")

    def run(self, *args):
        raise AssertionError("an engine called the spec's own run()")

    def enabled(self, *args):
        raise AssertionError("an engine called the spec's own enabled()")

    def initial_row(self, *args):
        raise AssertionError("an engine called the spec's own initial_row()")
'''


def test_a_spec_may_name_its_helpers_holds_step_run_enabled(tmp_path):
    """Engines evaluate a spec through backends (model/backends.py), never through methods of the user's class."""
    (tmp_path / "helpers.py").write_text(HELPER_NAMES)

    def isrcheck(*args):
        return subprocess.run(["isrcheck", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300)

    spec = ["--spec", "helpers.py:Helpers"]
    r = isrcheck("check", *spec, "--invariant", "no-committed-loss", "--out", "out", "--no-progress")
    assert r.returncode == 1 and "violated" in r.stdout, r.stdout + r.stderr
    trace = str(tmp_path / "out" / "helpers" / "no-committed-loss.itf.json")
    r = isrcheck("replay", trace, *spec)
    assert r.returncode == 0 and "reproduces" in r.stdout, r.stdout + r.stderr
    r = isrcheck("show", trace, *spec)
    assert r.returncode == 0 and "no-committed-loss" in r.stdout and "Traceback" not in r.stderr, r.stderr
    r = isrcheck("minimize", trace, *spec, "--output", "min.itf.json")
    assert r.returncode == 0 and (tmp_path / "min.itf.json").exists(), r.stdout + r.stderr


@pytest.mark.parametrize("attr", sorted(RESERVED))
def test_a_spec_redefining_what_engines_read_is_rejected_at_class_creation(attr):
    with pytest.raises(DeclarationError, match=rf"Bad\.{attr}: the engines read {attr} off every spec; give "):
        type("Bad", (KafkaReplication,), {attr: lambda self: None})


def test_spec_carries_no_engine_method():
    """The class a user subclasses declares; evaluation lives in model/backends.py."""
    engine = {"initial_row", "run", "step", "holds", "enabled", "traced", "traced_invariant", "guard_batch",
              "update_batch", "holds_batch", "z3_action", "z3_invariant", "z3_type_ok", "action_named"}
    assert not engine & set(dir(Spec))
    public = {n for n in vars(Spec) if not n.startswith("_")}
    assert public <= DECLARED | {"declared_invariants", "declared_properties", "liveness_expected", "bound_declarations"}


def test_bounds_are_declared_once_and_the_rest_derives():
    """defaults, limits, the CLI's flags, --set help, list and the gate's progress come from declared_bounds."""
    for name, cls in SPECS.items():
        declared = cls.bound_declarations()
        assert list(declared) == list(cls.defaults), name
        assert all(cls.limits[n] == (b.lo, b.hi) and b.doc for n, b in declared.items()), name
    kip = SPECS["kip-320"].bound_declarations()
    flagged = [n for n, b in kip.items() if b.kind == "bound"]
    assert flagged == ["replicas", "log_size", "max_records", "max_epochs", "max_crashes", "reassignments"]
    help_text = " ".join(run("check", "--help").stdout.split())
    for n in flagged:
        assert f"--{n.replace('_', '-')}" in help_text
    assert "--set unclean=1" in help_text and "--acks-all" not in help_text
    (entry,) = json.loads(run("list", "kip-320", "--format", "json").stdout)
    assert entry["bounds"]["min_isr"] == {"default": 1, "lo": 1, "hi": 5, "kind": "option",
                                          "doc": kip["min_isr"].doc}
    assert entry["default_bounds"]["max_epochs"] == kip["max_epochs"].default


def test_a_family_may_still_state_defaults_and_limits_dicts():
    """The older way (a family stating ``defaults``/``limits``) keeps working: each is an undocumented option."""
    class Counter(Spec):
        name = "counter"
        defaults = {"top": 2}
        limits = {"top": (1, 3)}

        def configure(self, bounds):
            self.TOP = bounds.top

        def fields(self):
            return [Field("x", 0, 3)]

        @action()
        def bump(self, s):
            s.require(s.x < self.TOP)
            s.x = s.x + 1

        @invariant("small")
        def small(self, s):
            return s.x <= self.TOP

    assert Counter.bound_declarations() == {"top": Bound("top", 2, 1, 3)}
    assert Counter(top=3).bounds == {"top": 3}


@pytest.mark.parametrize("bounds, words", [
    ((Bound("n", 5, 1, 3, "size"),), "n's default 5 is outside 1..3"),
    ((Bound("n", 1, 1, 3), Bound("n", 2, 1, 3)), "'n' is declared twice"),
    ((("n", 1, 1, 3),), "a tuple of Bound("),
    ((Bound("n", 1, 1, 3, kind="size"),), "kind is \"bound\" or \"option\""),
])
def test_bound_declaration_mistakes_fail_at_class_creation(bounds, words):
    with pytest.raises(DeclarationError) as info:
        type("Sized", (Spec,), {"declared_bounds": bounds})
    assert words in str(info.value)


def _modules(folder, package):
    """module name -> its file, for every module of the folder and of the packages in its subfolders."""
    found = {}
    for where, dirs, files in os.walk(os.path.join(ROOT, folder)):
        dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(where, d, "__init__.py")))
        sub = os.path.relpath(where, os.path.join(ROOT, folder))
        prefix = package if sub == "." else f"{package}.{sub.replace(os.sep, '.')}"
        found.update({f"{prefix}.{name[:-3]}": os.path.join(where, name) for name in sorted(files)
                      if name.endswith(".py")})
    return found


def _imports(modules):
    """module -> the isrcheck modules it imports anywhere in its source (lazy imports in functions too)."""
    packages = {name[:-len(".__init__")] for name in modules if name.endswith(".__init__")}
    graph = {}
    for module, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("isrcheck."):
                parent = node.module in packages
                deps |= {f"{node.module}.{a.name}" for a in node.names} if parent else {node.module}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("isrcheck.")}
        graph[module] = deps
    return graph


def test_engines_and_model_import_no_module_that_imports_them_back():
    """No import cycle (fuzz.py and minimize.py had one): the compiled backend lives in model/backends.py."""
    graph = _imports({**_modules("checker", "isrcheck.checker"), **_modules("model", "isrcheck.model")})
    assert "isrcheck.checker.fuzzing.fuzz" not in graph["isrcheck.checker.traces.minimize"]
    # the graph sees the imports it checks
    assert "isrcheck.checker.exhaustive.bfs" in graph["isrcheck.checker.exhaustive.liveness"]

    def reaches(start, goal, seen):
        for dep in graph.get(start, ()):
            if dep == goal or (dep not in seen and dep in graph and reaches(dep, goal, seen | {dep})):
                return True
        return False
    assert [m for m in graph if reaches(m, m, {m})] == []
