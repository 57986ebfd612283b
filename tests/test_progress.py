"""Progress on stderr as CI logs show it (no terminal): each engine's line in its own units, periodic, never
wrapped and within 80 columns. The installed ``isrcheck`` script in a subprocess."""
import os
import re
import subprocess
import sys

from isrcheck.checker.command_line.cli import count

SCRIPT = os.path.join(os.path.dirname(sys.executable), "isrcheck")
NUMBER = r"[\d,]+(\.\d\dM)?"


def progress_lines(*args):
    r = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=300)
    lines = [line for line in r.stderr.splitlines() if line.endswith(" MB")]
    assert lines, r.stderr
    assert all(len(line) <= 80 for line in lines), lines
    return r, lines


def test_counts_stay_short():
    assert [count(n) for n in (0, 999_999, 1_000_000, 11_634_020)] == ["0", "999,999", "1.00M", "11.63M"]


def test_the_exhaustive_search_shows_depth_frontier_and_states(tmp_path):
    _, lines = progress_lines("check", "--spec", "kip-320", "--invariant", "no-committed-loss", "--out", str(tmp_path))
    assert all(re.fullmatch(rf"depth \d+ · frontier {NUMBER} · {NUMBER} states · {NUMBER}/s · {NUMBER} MB", line)
               for line in lines), lines


def test_fuzz_shows_runs_and_steps(tmp_path):
    _, lines = progress_lines("fuzz", "--spec", "kip-320", "--invariant", "no-committed-loss", "--budget", "7s",
                              "--out", str(tmp_path), "--seed", "1")
    assert len(lines) >= 2                          # the first at once, then every 5 s
    assert all(re.fullmatch(rf"fuzz: {NUMBER} runs · {NUMBER} steps · {NUMBER} states · \d+ s · {NUMBER} MB", line)
               for line in lines), lines
    runs = [int(line.split()[1].replace(",", "")) for line in lines]
    assert runs[-1] > 0 and runs == sorted(runs)


def test_bmc_shows_the_depth_checked_and_the_solver_time(tmp_path):
    _, lines = progress_lines("check", "--engine", "bmc", "--spec", "kip-320", "--invariant", "no-committed-loss",
                              "--depth", "3", "--out", str(tmp_path))
    assert re.fullmatch(rf"bmc: depth 1 of 3 checked · [\d.]+ s on it · \d+ s in all · {NUMBER} MB", lines[0]), lines
    assert not any("frontier" in line for line in lines)


def test_prove_names_its_phases():
    r, lines = progress_lines("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--lemma",
                              "log-matching")
    assert r.returncode == 4
    assert lines[0].startswith("prove: base case (SAT), every path of up to 1 state · ")
    assert lines[1].startswith("prove: induction step (z3), 1 state with the invariant and 1 lemmas · ")


def test_the_gate_shows_spec_k_of_n_within_80_columns(tmp_path):
    r = subprocess.run([SCRIPT, "gate", "hw-truncation", "kafka-14704", "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("gate: [")]
    assert all(len(line) <= 80 for line in lines), lines
    assert any(re.match(r"gate: \[\d+/\d+\] kafka-14704: searching \d+ invariants at its defaults$", line) for line in lines), lines
    assert any(re.match(r"gate: \[\d+/\d+\] hw-truncation/kafka-1211: searching \d+ invariants at .*max_epochs=2", line) for line in lines), lines
    assert any(re.match(r"gate: \[\d+/\d+\] kafka-14704: as expected · [\d,]+ states · depth \d+ · ", line)
               for line in lines), lines


def test_no_progress_shows_nothing_and_loads_no_console():
    """``--no-progress --format json`` (what scripts and the TLC comparison run): no progress line, and rich,
    which only prints, is never imported (30 ms of a 0.8 s check)."""
    r = subprocess.run([sys.executable, "-X", "importtime", SCRIPT, "check", "--spec", "tla-kip101", "--replicas",
                        "2", "--invariant", "type-ok", "--no-progress", "--format", "json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    imported = [line.rpartition("|")[2].strip() for line in r.stderr.splitlines() if line.startswith("import time")]
    assert "numpy" in imported and not any(m.partition(".")[0] == "rich" for m in imported)
    assert not [line for line in r.stderr.splitlines() if not line.startswith("import time")]
    assert '"type-ok": "holds"' in r.stdout
