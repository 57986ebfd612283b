"""The engine registry (checker/engine/engines.py): the command line reaches every engine through it, by name alone."""
import ast
import json
import shutil
import subprocess

import isrcheck.checker.command_line.cli as cli_module
import isrcheck.checker.command_line.report as report_module
from isrcheck.checker.engine.engines import ENGINES, which


def isrcheck(*args):
    return subprocess.run([shutil.which("isrcheck"), *args], capture_output=True, text=True, timeout=120)


def test_the_command_line_reaches_the_engines_through_the_registry_alone():
    """cli.py imports no engine's entry point and report.py compares no engine's name: what differs is in the
    registry."""
    entry_points = {("isrcheck.checker.exhaustive.bfs", "search"), ("isrcheck.checker.symbolic.bmc", "bmc"),
                    ("isrcheck.checker.spark.spark_engine", "spark_search")}
    cli_tree = ast.parse(open(cli_module.__file__, encoding="utf-8").read())
    imported = {(n.module, a.name) for n in ast.walk(cli_tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert imported & entry_points == set()
    compared = [n.lineno for n in ast.walk(ast.parse(open(report_module.__file__, encoding="utf-8").read()))
                if isinstance(n, ast.Compare) and any(isinstance(c, ast.Constant) and c.value in ENGINES
                                                      for c in [n.left, *n.comparators])]
    assert compared == []
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
    assert (r.returncode, r.stderr) == (2, "isrcheck: error: --workdir does nothing with --engine local (it is for --engine spark)\n")


def test_a_settings_files_workdir_is_left_to_the_engines_that_read_it(tmp_path):
    """A settings file may hold one engine's options: a local run leaves its Spark workdir alone (no folder made,
    no refusal of --checkpoint), while the same option typed for the local engine is refused."""
    (tmp_path / "isrcheck.toml").write_text('[check]\nworkdir = "spark-work"\n')
    r = subprocess.run([shutil.which("isrcheck"), "check", "--spec", "acks-1", "--invariant", "log-matching",
                        "--checkpoint", "snap", "--no-progress", "--out", "out"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "spark-work").exists() and (tmp_path / "snap").is_dir()
    assert ENGINES["spark"].reads.count("workdir") == 1 and "workdir" not in ENGINES["local"].reads


def test_z3_timeout_is_the_bmc_engines_time_limit_and_its_report_counts_no_states(tmp_path):
    r = isrcheck("check", "--spec", "kip-320", "--invariant", "log-matching", "--engine", "bmc", "--depth", "10000",
                 "--z3-timeout", "1", "--format", "json", "--no-progress", "--out", str(tmp_path))
    report = json.loads(r.stdout)
    assert r.returncode == 3 and report["budget_hit"].lower() == "z3 time limit 1s", (r.returncode, report["budget_hit"])
    assert report["distinct_states"] is None and report["verdicts"] == {"log-matching": "unknown"}
    r = isrcheck("check", "--spec", "acks-1", "--invariant", "log-matching", "--engine", "bmc", "--depth", "3",
                 "--no-progress", "--out", str(tmp_path))
    assert r.returncode == 3 and "every path of up to 3 states checked symbolically" in r.stdout, r.stdout
