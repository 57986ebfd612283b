"""A light install: the Spark engine's packages are an extra, and `--engine spark` without them says how to get them."""
import json
import subprocess
import sys
from importlib.metadata import requires

HIDE_SPARK = ("import sys; sys.modules['pyspark'] = sys.modules['pyarrow'] = None; "
              "from isrcheck.checker.command_line.cli import main; main(sys.argv[1:])")


def test_spark_packages_are_an_extra():
    core = [r for r in requires("isrcheck") if "extra ==" not in r]
    spark = [r for r in requires("isrcheck") if 'extra == "spark"' in r]
    assert not [r for r in core if r.startswith(("pyspark", "pyarrow"))], core
    assert sorted(r.split(">")[0] for r in spark) == ["pyarrow", "pyspark"]


def test_spark_engine_without_its_packages_is_bad_usage_with_the_install_command():
    done = subprocess.run([sys.executable, "-c", HIDE_SPARK, "check", "--spec", "acks-1", "--all",
                           "--engine", "spark", "--no-progress"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("isrcheck: error: --engine spark needs pyspark and pyarrow: "
                                   "pip install 'isrcheck[spark]'")
    assert done.stdout == ""


def test_local_engine_needs_no_spark_packages(tmp_path):
    done = subprocess.run([sys.executable, "-c", HIDE_SPARK, "check", "--spec", "acks-1",
                           "--invariant", "no-committed-loss", "--no-progress", "--format", "json",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr          # acks=1 loses an acknowledged record: a real violation
    assert json.loads(done.stdout)["verdicts"] == {"no-committed-loss": "violated"}
    assert (tmp_path / "acks-1" / "no-committed-loss.itf.json").is_file()
