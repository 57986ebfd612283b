"""Issue 17: verdicts that depend on version-exact Kafka semantics, through the installed console script."""
from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import subprocess

import pytest

import isrcheck.model as model_package


def isrcheck(*args):
    return subprocess.run(["isrcheck", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", ["kip-320", "kip-497"])
def test_a_lost_fetch_response_loses_nothing_once_the_epoch_start_offset_is_the_leaders_leo(name):
    r = isrcheck("check", "--spec", name, "--invariant", "no-committed-loss", "--set", "fetch_response_loss=1",
                 "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["verdicts"] == {"no-committed-loss": "holds"}


def test_kafka_1120_a_fast_bounce_lets_the_leader_rewrite_its_epoch_until_kip_380(tmp_path):
    """2.1: the bounced leader goes unnoticed and re-applies its own epoch after losing its unflushed tail."""
    r = isrcheck("check", "--spec", "kip-320", "--invariant", "log-matching", "--set", "unflushed_loss=1",
                 "--max-crashes", "2", "--out", str(tmp_path), "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    trace = json.load(open(json.loads(r.stdout)["trace_files"]["log-matching"]))
    steps = [(s["#meta"]["action"], s["#meta"]["params"]) for s in trace["states"][1:]]
    assert len(trace["states"]) == 11
    bounced = next(p["r"] for a, p in steps if a == "restart")
    crash_at = steps.index(("crash", {"r": bounced}))
    epoch_then = trace["states"][crash_at]["leader_epoch"][bounced]           # the state before the crash
    assert trace["states"][crash_at]["leader"][bounced] == bounced
    assert ("apply_leader_and_isr", {"r": bounced, "e": epoch_then}) in steps    # its own epoch again
    # 2.7 has KIP-380: the controller handles the bounce as a failure first
    r = isrcheck("check", "--spec", "kip-497", "--invariant", "log-matching", "--set", "unflushed_loss=1",
                 "--max-crashes", "2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr


def test_kafka_10706_loops_on_2_1_and_ends_on_2_6_1(tmp_path):
    """KAFKA-10706 at kip-320's defaults: hw-advances and isr-regrows are violated by a lasso whose loop is one
    truncate_by_epoch; kafka-2.6.1 (the fix: Log.truncateTo cleans the cache at the LEO) holds both there."""
    r = isrcheck("check", "--spec", "kip-320", "--property", "hw-advances", "--property", "isr-regrows",
                 "--out", str(tmp_path), "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(r.stdout)["properties"]
    for prop in ("hw-advances", "isr-regrows"):
        assert report[prop]["verdict"] == "violated"
        trace = json.load(open(report[prop]["trace_file"]))
        loop = [s["#meta"]["action"] for s in trace["states"][trace["#meta"]["loop"] + 1:]]
        assert loop == ["truncate_by_epoch"], loop
    r = isrcheck("check", "--spec", "kafka-2.6.1", "--property", "hw-advances", "--property", "isr-regrows",
                 "--out", str(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p: v["verdict"] for p, v in json.loads(r.stdout)["properties"].items()} == {
        "hw-advances": "holds", "isr-regrows": "holds"}


@pytest.mark.parametrize("name, verdict", [("kip-320", "violated"), ("kafka-2.6.1", "holds")])
def test_truncation_terminates_sees_kafka_10706_one_epoch_past_the_defaults(name, verdict, tmp_path):
    """At the defaults (max_epochs=4) the loop that survives weak(elect_leader) (the leader dropped the looping
    follower from its ISR, so the controller can elect nobody else) needs the last epoch, where the obligation
    ends (epochs_exhausted); with a fifth epoch truncation-terminates is violated on 2.1 and holds with the fix."""
    r = isrcheck("check", "--spec", name, "--property", "truncation-terminates", "--max-epochs", "5",
                 "--out", str(tmp_path), "--format", "json")
    assert r.returncode == (1 if verdict == "violated" else 0), r.stdout + r.stderr
    assert json.loads(r.stdout)["properties"]["truncation-terminates"]["verdict"] == verdict


#: the Kafka classes the model's actions follow (apache/kafka, core and metadata modules)
KAFKA_CLASSES = ("Partition", "ReplicaManager", "AbstractFetcherThread", "ReplicaFetcherThread", "Log", "UnifiedLog",
                 "LogManager", "LeaderEpochFileCache", "KafkaController", "KafkaServer", "ReplicaStateMachine",
                 "PartitionStateMachine", "OfflinePartitionLeaderSelector", "PartitionLeaderElectionAlgorithms",
                 "AlterIsrManager", "PartitionChangeBuilder", "ReplicationControlManager", "BrokerHeartbeatManager",
                 "BrokerLifecycleManager", "ClusterControlManager", "ReplicaState", "Replica")
#: a Kafka release: 0.8, 0.10.2, 2.0.1, 3.9 (a bare digit or a year is not one)
VERSION = re.compile(r"(?<![\w.-])(0\.(8|9|10|11)|[1-4]\.\d{1,2})(\.\d+)?(?![\w-])")


def model_actions():
    """(class, action, docstring) for every @action defined in a module of isrcheck.model."""
    for info in pkgutil.iter_modules(model_package.__path__):
        module = importlib.import_module(f"isrcheck.model.{info.name}")
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                for name, fn in vars(cls).items():
                    if hasattr(fn, "__isrcheck_action__"):
                        yield cls.__name__, name, fn.__doc__ or ""


def test_every_model_action_names_the_kafka_class_and_version_it_follows():
    actions = list(model_actions())
    assert {"produce", "fetch", "crash", "truncate_on_fetch_response"} <= {name for _, name, _ in actions}
    classes = re.compile(r"\b(%s)\b" % "|".join(KAFKA_CLASSES))
    missing = [f"{cls}.{name}" for cls, name, doc in actions if not (classes.search(doc) and VERSION.search(doc))]
    assert not missing, f"@action docstrings without a Kafka class and version: {missing}"


@pytest.mark.parametrize("text, found", [("Partition.makeLeader (2.0.1+)", True), ("since 0.8", True),
                                         ("KIP-320", False), ("replicas 0..R-1", False), ("KAFKA-1120", False)])
def test_the_version_pattern_tells_a_release_from_other_numbers(text, found):
    assert bool(VERSION.search(text)) is found
