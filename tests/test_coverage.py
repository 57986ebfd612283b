"""Action coverage (TLC's -coverage): the engine's batch counts against a state-by-state recount on the scalar
backend, their identities with the search's totals, and the report through the installed ``isrcheck`` script."""
import json
import os
import subprocess
import sys

import numpy as np

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.model import backends
from isrcheck.specs import SPECS

SCRIPT = os.path.join(os.path.dirname(sys.executable), "isrcheck")


def small(**bounds):
    return SPECS["kip-320"](max_epochs=2, max_crashes=0, **bounds)


def test_counts_equal_a_state_by_state_recount():
    spec = small(max_records=1)          # 745 states, every action fires
    states = []
    result = search(spec, [], on_states=lambda rows: states.extend(rows.T.copy()))
    assert result.complete and len(states) == result.distinct_states
    enabled = np.zeros(len(spec.actions), dtype=np.int64)
    fired = np.zeros(len(spec.actions), dtype=np.int64)
    for row in states:
        for inst in spec.actions:
            nxt = backends.scalar(spec).step(row, inst)
            if nxt is not None:
                enabled[inst.id] += 1
                fired[inst.id] += not np.array_equal(nxt, row)
    counts = result.coverage.counts
    assert (counts[0] == enabled).all() and (counts[1] == fired).all()
    assert counts[1].sum() == result.transitions                 # every transition is one instance's move
    assert counts[2].sum() == result.distinct_states - 1         # every state but the initial one, reached once
    assert (counts[2] <= counts[1]).all()
    assert result.never_fired == result.coverage.never_fired()


def test_counts_do_not_depend_on_the_chunk_size():
    spec = small()
    a, b = search(spec, ["no-committed-loss"]), search(spec, ["no-committed-loss"], chunk=997)
    assert (a.coverage.counts == b.coverage.counts).all()


def test_json_always_has_coverage_and_text_on_request(tmp_path):
    args = ["check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--max-epochs", "3", "--no-progress",
            "--out", str(tmp_path)]
    r = subprocess.run([SCRIPT, *args, "--format", "json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    by_action, instances = report["coverage"]["actions"], report["coverage"]["instances"]
    assert sum(c["fired"] for c in by_action.values()) == report["transitions"]
    assert sum(c["new_states"] for c in instances.values()) == report["distinct_states"] - 1
    assert by_action["exit_out_of_range"]["fired"] == 0 and report["never_fired"] == ["exit_out_of_range"]
    assert instances["fetch(f=1, l=0)"]["enabled"] >= instances["fetch(f=1, l=0)"]["fired"] > 0
    plain = subprocess.run([SCRIPT, *args], capture_output=True, text=True)
    assert "new states" not in plain.stdout
    r = subprocess.run([SCRIPT, *args, "--coverage"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines() if line.split()[:1] and
            line.split()[0] in by_action}
    assert rows["exit_out_of_range"] == ["0/2", "0", "0", "(never)", "0"]
    fetch = by_action["fetch"]
    assert rows["fetch"] == [f"{fetch['instances_fired']}/{fetch['instances']}", f"{fetch['enabled']:,}",
                             f"{fetch['fired']:,}", f"{fetch['new_states']:,}"]
    assert "never fired: exit_out_of_range" in r.stdout


def test_the_python_api_has_it():
    import isrcheck
    result = isrcheck.check("kip-320", "no-committed-loss", max_epochs=2, max_crashes=0)
    fired = sum(c["fired"] for c in result.coverage["actions"].values())
    assert fired == result.transitions and result.coverage["instances"]["fetch(f=1, l=0)"]["fired"] > 0
