"""The engine registry (checker/engines.py): the command line reaches every engine through it, by name alone."""
import ast
import json
import os
import shutil
import subprocess

import isrcheck.checker.cli as cli_module
import isrcheck.checker.report as report_module
from isrcheck.checker.engines import ENGINES, which


def isrcheck(*args):
    return subprocess.run([shutil.which("isrcheck"), *args], capture_output=True, text=True, timeout=120)


def test_the_command_line_names_no_engine_in_a_branch():
    """No ``engine == "bmc"``: what differs between engines is in the registry, and --engine offers all of it."""
    found = []
    for module in (cli_module, report_module):
        for node in ast.walk(ast.parse(open(module.__file__, encoding="utf-8").read())):
            if isinstance(node, ast.Compare):
                literals = [c for c in [node.left, *node.comparators] if isinstance(c, (ast.Constant, ast.Tuple))]
                names = {e.value for c in literals for e in (c.elts if isinstance(c, ast.Tuple) else [c])
                         if isinstance(e, ast.Constant)}
                found += [f"{os.path.basename(module.__file__)}:{node.lineno}" for _ in names & set(ENGINES)]
    assert found == []
    option = next(p for p in cli_module.check.params if p.name == "engine")
    assert list(option.type.choices) == list(ENGINES) == ["local", "bmc", "spark"]


def test_what_an_engine_cannot_do_is_refused_naming_the_engines_that_can(tmp_path):
    assert which("resumable") == ["local", "spark"] and which("liveness") == ["local"]
    r = isrcheck("check", "--spec", "acks-1", "--invariant", "log-matching", "--engine", "bmc", "--checkpoint",
                 str(tmp_path / "snap"), "--no-progress", "--out", str(tmp_path))
    assert (r.returncode, r.stderr) == (2, "isrcheck: error: --checkpoint and --resume work with the local and spark "
                                           "engines only\n")
    r = isrcheck("check", "--spec", "acks-1", "--invariant", "log-matching", "--workdir", str(tmp_path / "w"),
                 "--no-progress", "--out", str(tmp_path))
    assert (r.returncode, r.stderr) == (2, "isrcheck: error: --workdir is for --engine spark\n")


def test_z3_timeout_is_the_bmc_engines_time_limit_and_its_report_counts_no_states(tmp_path):
    r = isrcheck("check", "--spec", "kip-320", "--all", "--engine", "bmc", "--depth", "10000", "--z3-timeout", "1",
                 "--format", "json", "--no-progress", "--out", str(tmp_path))
    report = json.loads(r.stdout)
    assert r.returncode == 3 and report["budget_hit"].lower() == "z3 time limit 1s", (r.returncode, report["budget_hit"])
    assert report["distinct_states"] is None and set(report["verdicts"].values()) == {"unknown"}
    r = isrcheck("check", "--spec", "acks-1", "--invariant", "log-matching", "--engine", "bmc", "--depth", "3",
                 "--no-progress", "--out", str(tmp_path))
    assert r.returncode == 3 and "every path of up to 3 states checked symbolically" in r.stdout, r.stdout
