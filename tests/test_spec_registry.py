"""The built-in specs' registry (specs/__init__.py): its static tables say what the classes declare, and a
command loads only the family of the spec it names."""
from __future__ import annotations

import os
import shutil
import subprocess

from isrcheck.model.spec import Spec
from isrcheck.specs import BOUND_FLAGS, BUILT_IN, SPECS, SWITCH_EXAMPLE


def isrcheck(*args, env=None):
    return subprocess.run([shutil.which("isrcheck"), *args], capture_output=True, text=True, timeout=120, env=env)


def test_the_tables_say_what_the_families_declare():
    classes = [SPECS[name] for name in BUILT_IN]
    assert [c.name for c in classes] == list(BUILT_IN) and all(issubclass(c, Spec) for c in classes)
    bounds, switches = {}, []
    for cls in classes:
        for b in cls.bound_declarations().values():
            if b.kind == "bound":
                bounds.setdefault(b.name, b.doc)
            elif b.lo == b.default == 0 < b.hi:
                switches.append((b.name, b.hi))
    assert list(BOUND_FLAGS.items()) == list(bounds.items())
    assert SWITCH_EXAMPLE == switches[0]


def test_a_check_loads_only_the_family_it_names(tmp_path):
    """Python's import log of a whole ``isrcheck check``: the tla family's modules, none of the Kafka model's. (The
    log names what ``import`` statements load: the registry's own ``importlib.import_module`` calls are not in it,
    the modules those import are.)"""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    r = isrcheck("check", "--spec", "tla-kip320", "--invariant", "strong-isr", "--max-epochs", "1", "--no-progress", "--out", str(tmp_path),
                 env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "isrcheck.specs.tla.base" in loaded
    assert not {m for m in loaded if m.startswith("isrcheck.specs.") and not m.startswith("isrcheck.specs.tla")}
    assert "isrcheck.model.kafka" not in loaded


def test_the_bound_flags_are_offered_and_a_mistyped_one_refused_in_one_line():
    r = isrcheck("check", "--help")
    assert r.returncode == 0
    for name in BOUND_FLAGS:
        assert f"--{name.replace('_', '-')}" in r.stdout
    r = isrcheck("check", "--spec", "tla-kip320", "--max-epoch", "2")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--max-epoch" in r.stderr
