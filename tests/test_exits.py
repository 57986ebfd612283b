"""Exit codes as CI sees them: the installed ``isrcheck`` script in a subprocess, the gate run by the very
command line `.ci/run` has, and traces of ordinary runs kept out of the gate's golden store.

The specs come from a registry set up by a ``sitecustomize`` module on ``PYTHONPATH`` (written by the
test into its temporary directory), so the gate searches two small specs in a second instead of every
spec in ``specs/``, and the product has no test hook.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.join(os.path.dirname(__file__), "..")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "isrcheck")

SITECUSTOMIZE = '''
import os
from isrcheck import specs
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS


class SmallKip320(Kip320):
    """KIP-320 at bounds that search in about a second: only the benign split brain is violated."""
    name = "small-kip-320"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas: not what this test is about
    defaults = {**Kip320.defaults, "max_epochs": 2, "max_crashes": 0}
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds"}   # kip-320's loop needs more epochs


class Toothless(SmallKip320):
    """Must lose a committed record, but holds: the expectation is wrong."""
    name = "toothless"
    expected = {**SmallKip320.expected, "no-committed-loss": "violated"}


specs.SPECS.clear()
specs.SPECS[SmallKip320.name] = SmallKip320
if os.environ.get("GATE_TEST_TOOTHLESS"):
    specs.SPECS[Toothless.name] = Toothless
'''


def ci_gate_line():
    """The gate step of .ci/run, exactly as written there."""
    lines = [line.strip() for line in open(os.path.join(REPO, ".ci", "run"))]
    gate = [line for line in lines if re.match(r"isrcheck gate\b", line)]
    assert len(gate) == 1, gate
    return gate[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A working directory whose ``isrcheck`` sees the small registry, with a saved counterexample."""
    d = tmp_path_factory.mktemp("project")
    (d / "site").mkdir()
    (d / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["PYTHONPATH"] = str(d / "site")
    env["PATH"] = os.path.dirname(SCRIPT) + os.pathsep + env.get("PATH", "")
    # an ordinary check writes under isrcheck-out/, never into the gate's counterexamples/
    r = subprocess.run([SCRIPT, "check", "--spec", "small-kip-320", "--invariant", "single-acting-leader",
                        "--no-progress"], cwd=d, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    written = d / "isrcheck-out" / "small-kip-320" / "single-acting-leader.itf.json"
    assert written.is_file() and str(written.relative_to(d)) in r.stdout
    assert not (d / "counterexamples").exists()
    (d / "counterexamples" / "small-kip-320").mkdir(parents=True)
    shutil.copy(written, d / "counterexamples" / "small-kip-320")
    return d, env


def run(project, command, **extra_env):
    d, env = project
    return subprocess.run(command, cwd=d, env={**env, **extra_env}, capture_output=True, text=True, timeout=120)


def test_ci_gate_step_passes_then_fails_on_a_tampered_saved_trace(project):
    d, _ = project
    step = ["bash", "-c", f"set -euo pipefail\n{ci_gate_line()}"]
    ok = run(project, step)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "gate passed" in ok.stdout
    saved = d / "counterexamples" / "small-kip-320" / "single-acting-leader.itf.json"
    original = saved.read_text()
    try:
        data = json.loads(original)
        data["states"] = data["states"][:-1]                 # cut short: it no longer reaches the violation
        saved.write_text(json.dumps(data))
        failed = run(project, step)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "gate FAILED" in failed.stdout and "no longer replays" in failed.stdout
        sarif = run(project, [SCRIPT, "gate", "--no-progress", "--format", "sarif"])
        assert sarif.returncode == 1
        invocation, = json.loads(sarif.stdout)["runs"][0]["invocations"]
        assert invocation["exitCode"] == sarif.returncode
    finally:
        saved.write_text(original)


def test_gate_exits_1_on_an_unmet_expectation_and_sarif_agrees(project):
    d, _ = project
    data = json.loads((d / "counterexamples" / "small-kip-320" / "single-acting-leader.itf.json").read_text())
    data["#meta"]["spec"] = "toothless"                    # its expected split brain is saved: only the loss is unmet
    (d / "counterexamples" / "toothless").mkdir(exist_ok=True)
    (d / "counterexamples" / "toothless" / "single-acting-leader.itf.json").write_text(json.dumps(data))
    r = run(project, [SCRIPT, "gate", "--no-progress", "--format", "sarif", "--output", str(d / "gate.sarif")],
            GATE_TEST_TOOTHLESS="1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "gate FAILED: 1 of" in r.stdout and "toothless no-committed-loss" in r.stdout
    sarif = json.loads((d / "gate.sarif").read_text())
    run_, = sarif["runs"]
    assert run_["invocations"][0]["exitCode"] == 1
    assert [res["ruleId"] for res in run_["results"]] == ["expected-violation-not-found"]
    ok = run(project, [SCRIPT, "gate", "--no-progress", "--format", "sarif"])
    assert ok.returncode == 0 and json.loads(ok.stdout)["runs"][0]["invocations"][0]["exitCode"] == 0
