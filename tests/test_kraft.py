"""The KRaft-era family (model/kraft.py): its verdicts on the command line, and each mechanism on a real state.

The states come from the saved counterexamples (counterexamples/kafka-*/): the steps of a trace are re-run on
the scalar backend of the spec under test, so each test reaches its state through the model's own actions and
then checks one step against what Kafka does (and what the bug versions do instead).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from isrcheck.checker import trace as traces
from isrcheck.model import backends
from isrcheck.specs import SPECS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED = os.path.join(ROOT, "counterexamples")


def isrcheck(*args, cwd):
    return subprocess.run(["isrcheck", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def words(text):
    """The text with its line wrapping undone."""
    return " ".join(text.split())


def walk(spec_name, saved, upto=None, **bounds):
    """Re-run the steps of a saved trace on ``spec_name``: [(action name, params, row)] of every step it takes."""
    spec = SPECS[spec_name](**bounds)
    steps = traces.load(os.path.join(SAVED, saved)).steps
    row = backends.scalar(spec).initial_row()
    out = [(None, {}, row)]
    for name, params, _ in steps[1:upto]:
        row = backends.scalar(spec).step(row, backends.action_named(spec, name, params))
        assert row is not None, f"{name}({params}) is disabled on {spec_name}"
        out.append((name, params, row))
    return spec, out


def state(spec, row):
    return spec.layout.decode(row)


# --- the command line, at the defaults ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["kafka-3.9", pytest.param("kafka-4.0", marks=pytest.mark.long)])   # 4.0: ~40 s
def test_check_all_meets_every_expectation(name, tmp_path):
    """Every invariant as expected (only the benign split brain breaks; kafka-4.0 does not check strong-isr);
    --all checks the properties too: both violate write-resolves (exit 1), kafka-3.9 hw-advances too."""
    r = isrcheck("check", "--spec", name, "--all", "--format", "json", cwd=tmp_path)
    cls = SPECS[name]
    liveness = cls.liveness_expected()[0]
    assert r.returncode == (1 if "violated" in liveness.values() else 0), r.stderr
    assert liveness["write-resolves"] == "violated" and (liveness["hw-advances"] == "violated") is (name == "kafka-3.9")
    report = json.loads(r.stdout)
    assert report["verdicts"] == cls.expected
    assert {p: v["verdict"] for p, v in report["properties"].items()} == liveness
    # 4.0's last known leader is elected only after two unclean stops (configuration last-known-leader)
    assert report["benign"] == ["single-acting-leader"]
    assert report["never_fired"] == (["elect_last_known_leader"] if name == "kafka-4.0" else [])
    assert [inv for inv, v in cls.expected.items() if v == "violated"] == ["single-acting-leader"]
    assert ("strong-isr" in cls.expected) is (name == "kafka-3.9") and "strong-live-isr" in cls.expected


def test_kafka_4_0_says_why_it_does_not_check_strong_isr(tmp_path):
    r = isrcheck("list", "kafka-4.0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "strong-isr is not checked" in words(r.stdout) and "KIP-966" in r.stdout
    r = isrcheck("check", "--spec", "kafka-4.0", "--invariant", "strong-isr", cwd=tmp_path)
    assert r.returncode == 2 and "strong-isr" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name, invariant, phrases", [
    ("kafka-13141", "no-committed-loss", ["DivergingEpoch", "records r0's fetch offset 1 although it diverges"]),
    ("kafka-14704", "hw-log-matching", ["DivergingEpoch", "applies the response's HW 1 before truncating"]),
    ("kafka-14617", "no-committed-loss", ["accepted, although r1 registered again", "no broker-epoch check"]),
])
def test_a_bug_version_breaks_what_its_ticket_says_and_show_names_the_step(name, invariant, phrases, tmp_path):
    r = isrcheck("check", "--spec", name, "--invariant", invariant, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    path = tmp_path / "isrcheck-out" / name / f"{invariant}.itf.json"
    assert SPECS[name].expected[invariant] == "violated" and invariant in SPECS[name].expected_why
    shown = isrcheck("show", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    for w in phrases:
        assert w in words(shown.stdout)
    # the fixed version keeps the invariant at the same bounds
    fixed = "kafka-4.0" if name == "kafka-14617" else "kafka-3.9"
    assert SPECS[fixed]().bounds == SPECS[name]().bounds
    r = isrcheck("check", "--spec", fixed, "--invariant", invariant, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_show_says_why_kafka_4_0_rejects_the_stale_alter_partition(tmp_path):
    """kafka-14617's losing run, on kafka-4.0: the controller turns the AlterPartition down (KIP-903)."""
    spec, steps = walk("kafka-4.0", "kafka-14617/no-committed-loss.itf.json", upto=13)
    assert steps[-1][0] == "alter_partition"
    path = str(tmp_path / "rejected.itf.json")
    trace = traces.from_steps(spec, "no-committed-loss", "test", [(backends.action_named(spec, n, p) if n else None, row)
                                                   for n, p, row in steps])
    traces.save(trace, path)
    r = isrcheck("show", path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = words(r.stdout)
    assert "rejected, the broker epoch it carries for r1 is stale" in text and "KIP-903" in text
    assert "in ZooKeeper" not in text


def test_show_names_the_caught_up_replica_that_holds_back_the_hw(tmp_path):
    spec, steps = walk("kafka-3.9", "kafka-3.9/hw-advances.itf.json", upto=9)
    inst = backends.action_named(spec, "produce", {"l": 0})
    steps.append(("produce", {"l": 0}, backends.scalar(spec).step(steps[-1][2], inst)))
    path = str(tmp_path / "held.itf.json")
    traces.save(traces.from_steps(spec, "no-committed-loss", "test", [(backends.action_named(spec, n, p) if n else None, row)
                                                                      for n, p, row in steps]), path)
    r = isrcheck("show", path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("r1 is caught up but not in the ISR, so r0 keeps its HW at 0 until r1 has the records "
            "(shouldWaitForReplicaToJoinIsr, KAFKA-15021)") in words(r.stdout)
    r = isrcheck("show", path, "--format", "mermaid", cwd=tmp_path)
    assert "partition record of leader epoch 1 applied" in r.stdout and "LeaderAndIsr" not in r.stdout


# --- mechanism 1: truncate-on-fetch ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["kafka-3.9", "kafka-14704"])
def test_a_diverging_fetch_truncates_in_a_second_step_and_only_the_bug_moves_the_hw_first(name):
    spec, steps = walk(name, "kafka-14704/hw-log-matching.itf.json")
    assert steps[-1][0] == "fetch"
    before, after = state(spec, steps[-2][2]), state(spec, steps[-1][2])
    assert after["truncating"][0] and after["leo"][0] == before["leo"][0] == 1     # no records, no truncation yet
    assert after["diverging_end"][0] == 0
    assert before["hw"][0] == 0 and after["hw"][0] == (1 if name == "kafka-14704" else 0)
    assert after["remote_leo"][1][0] == before["remote_leo"][1][0]                  # the leader records nothing
    assert backends.action_named(spec, "fetch", {"f": 0, "l": 1}) not in backends.scalar(spec).enabled(steps[-1][2])
    row = backends.scalar(spec).step(steps[-1][2], backends.action_named(spec, "truncate_on_fetch_response", {"f": 0}))
    done = state(spec, row)
    assert done["leo"][0] == 0 and done["hw"][0] == 0 and not done["truncating"][0]
    assert done["log_record"][0] == [0] * spec.L


@pytest.mark.parametrize("name, recorded", [("kafka-3.9", False), ("kafka-13141", True)])
def test_the_leader_records_a_diverging_fetch_only_with_kafka_13141(name, recorded):
    spec, steps = walk(name, "kafka-13141/no-committed-loss.itf.json", upto=10)
    assert steps[-1][0] == "fetch"
    before, after = state(spec, steps[-2][2]), state(spec, steps[-1][2])
    assert after["truncating"][0]
    assert (after["remote_leo"][1][0] == 1) is recorded and before["remote_leo"][1][0] != 1
    assert (after["hw"][1] > before["hw"][1]) is recorded


# --- mechanism 2: AlterPartition and broker epochs ------------------------------------------------------------
@pytest.mark.parametrize("name, accepted", [("kafka-4.0", False), ("kafka-14617", True)])
def test_alter_partition_with_a_stale_broker_epoch_is_rejected_unless_kip_903_is_removed(name, accepted):
    spec, steps = walk(name, "kafka-14617/no-committed-loss.itf.json", upto=13)
    names = [n for n, _, _ in steps]
    assert names[-3:] == ["crash", "restart", "alter_partition"]
    pending = state(spec, steps[-4][2])
    assert pending["alter_pending"][0] and pending["pending_epochs_current"][0]
    assert not state(spec, steps[-2][2])["pending_epochs_current"][0]       # r1 registered again
    after = state(spec, steps[-1][2])
    assert bool(after["q_isr"][1]) is accepted and bool(after["isr"][0][1]) is accepted
    assert not after["alter_pending"][0]                                     # either way the request is answered


def test_an_isr_shrink_by_the_controller_keeps_the_leader_epoch():
    spec, steps = walk("kafka-4.0", "kafka-3.9/hw-advances.itf.json", upto=4)       # r0 leads, r1 follows
    row = backends.scalar(spec).step(steps[-1][2], backends.action_named(spec, "crash", {"r": 1}))
    s = state(spec, row)
    assert s["q_isr"][1] and not s["up"][1]
    row = backends.scalar(spec).step(row, backends.action_named(spec, "controller_shrink_isr", {"r": 1}))
    after = state(spec, row)
    assert not after["q_isr"][1] and after["q_epoch"] == s["q_epoch"] and not after["zk_version_current"][0]
    row = backends.scalar(spec).step(row, backends.action_named(spec, "apply_partition_change", {"r": 0}))
    assert state(spec, row)["isr"][0] == after["q_isr"] and state(spec, row)["zk_version_current"][0]


def test_controlled_shutdown_takes_a_live_follower_out_of_the_isr_for_good():
    """KIP-841: in controlled shutdown the follower keeps fetching, but is neither re-added nor waited for."""
    spec, steps = walk("kafka-3.9", "kafka-3.9/hw-advances.itf.json", upto=4)
    row = steps[-1][2]
    epoch = state(spec, row)["q_epoch"]
    for name, params in [("controlled_shutdown", {"r": 1}), ("apply_partition_change", {"r": 0}),
                         ("produce", {"l": 0}), ("fetch", {"f": 1, "l": 0})]:
        row = backends.scalar(spec).step(row, backends.action_named(spec, name, params))
        assert row is not None, name
    s = state(spec, row)
    assert s["shutting_down"][1] and s["up"][1] and s["q_epoch"] == epoch
    assert s["q_isr"] == [True, False] and s["isr"][0] == [True, False]
    assert s["leo"][1] == 1 and not s["alter_pending"][0]           # fetched the record, not proposed for the ISR
    assert s["hw"][0] == 1                                           # the leader did not wait for it either


# --- mechanisms 3 and 4: the 3.x HW and the lag ---------------------------------------------------------------
def test_a_caught_up_replica_outside_the_isr_holds_back_the_hw_until_its_lag_expires():
    spec, steps = walk("kafka-3.9", "kafka-3.9/hw-advances.itf.json", upto=9)
    row = steps[-1][2]
    s = state(spec, row)
    assert s["isr"][0] == [True, False] and s["caught_up"][0][1] and s["hw"][0] == 0 < s["leo"][0] == 1
    held = state(spec, backends.scalar(spec).step(row, backends.action_named(spec, "produce", {"l": 0})))
    assert held["hw"][0] == 0                                          # shouldWaitForReplicaToJoinIsr
    row = backends.scalar(spec).step(row, backends.action_named(spec, "lag_expires", {"l": 0, "f": 1}))
    free = state(spec, backends.scalar(spec).step(row, backends.action_named(spec, "produce", {"l": 0})))
    assert free["hw"][0] == 2 and free["acked_at"] == [0, 1]


def test_the_leader_drops_only_a_follower_that_is_not_caught_up():
    spec, steps = walk("kafka-3.9", "kafka-3.9/hw-advances.itf.json", upto=5)
    assert [n for n, _, _ in steps[-2:]] == ["apply_leader_and_isr", "lag_expires"]
    shrink = backends.action_named(spec, "shrink_isr", {"l": 0, "f": 1})
    assert shrink not in backends.scalar(spec).enabled(steps[-2][2])                  # in the ISR at election: caught up
    assert shrink in backends.scalar(spec).enabled(steps[-1][2])


def test_no_hw_advance_below_min_insync_replicas_and_hw_advances_owes_nothing_then():
    """kafka-3.9's lasso on kafka-4.0 (min.insync.replicas=2): the ISR {r0} is below it, so the HW stays (KAFKA-15583);
    once r1 is down too few brokers are ISR-eligible and hw-advances' obligation ends, where on kafka-3.9 it does
    not (its HW could advance, but nothing recomputes it)."""
    spec, steps = walk("kafka-4.0", "kafka-3.9/hw-advances.itf.json")
    assert [n for n, _, _ in steps[-3:]] == ["produce", "alter_partition", "crash"]
    s = state(spec, steps[-1][2])
    assert s["isr"][0] == [True, False] and spec.min_isr == 2 and s["hw"][0] == 0 < s["leo"][0]
    assert backends.scalar(spec).holds(steps[-1][2], spec.properties["hw-advances"].goal)
    spec39, steps39 = walk("kafka-3.9", "kafka-3.9/hw-advances.itf.json")
    assert state(spec39, steps39[-1][2])["hw"][0] == 0
    assert not backends.scalar(spec39).holds(steps39[-1][2], spec39.properties["hw-advances"].goal)


def test_the_hw_is_recomputed_only_when_the_follower_fetch_offset_moves():
    """Partition.updateFollowerFetchState (3.9): maybeIncrementLeaderHW only if the follower's LEO changed."""
    spec, steps = walk("kafka-3.9", "kafka-3.9/hw-advances.itf.json", upto=9)
    assert steps[-1][0] == "alter_partition"
    step = backends.scalar(spec).step
    row = step(steps[-1][2], backends.action_named(spec, "lag_expires", {"l": 0, "f": 1}))
    row = step(row, backends.action_named(spec, "fetch", {"f": 1, "l": 0}))      # again at offset 0: r1 gets record 1
    s = state(spec, row)
    assert s["remote_leo"][0][1] == 0 and s["leo"][1] == 1 and not s["caught_up"][0][1]
    assert s["hw"][0] == 0                       # r1 no longer holds it back, but nothing recomputed the HW
    s = state(spec, step(row, backends.action_named(spec, "fetch", {"f": 1, "l": 0})))   # at offset 1: moved
    assert s["remote_leo"][0][1] == 1 and s["hw"][0] == 1


def test_a_rejected_alter_partition_does_not_recompute_the_hw():
    """handleAlterPartitionError (3.9) goes back to the committed ISR without maybeIncrementLeaderHW."""
    spec, steps = walk("kafka-4.0", "kafka-14617/no-committed-loss.itf.json", upto=13)
    before, after = state(spec, steps[-2][2]), state(spec, steps[-1][2])
    assert steps[-1][0] == "alter_partition" and not after["q_isr"][1] and not after["alter_pending"][0]
    assert after["hw"][0] == before["hw"][0] and after["acked_at"] == before["acked_at"]


# --- KIP-966's last known ELR (4.0) ---------------------------------------------------------------------------
LAST_KNOWN = """
from isrcheck.model.expr import any_of
from isrcheck.model.spec import invariant
from isrcheck.specs.kafka_4_0 import Kafka40


class LastKnown(Kafka40):
    name = "kafka-4.0-last-known"
    expected = {**Kafka40.expected, "last-known-leader-kept": "holds"}

    @invariant("last-known-leader-kept")
    def kept(self, s):
        \"\"\"A last known leader is stored only while the partition is leaderless with an empty ISR.\"\"\"
        empty = ~any_of(s.q_isr[i] for i in self.REPLICAS)
        return (s.q_last_known_leader == self.NONE) | ((s.q_leader == self.NONE) & empty)
"""


def test_the_last_known_leader_is_kept_only_while_the_partition_is_leaderless(tmp_path):
    """PartitionChangeBuilder.maybeUpdateLastKnownLeader (4.0): set when the ISR empties, cleared with a leader;
    at bounds where every action fires (the last known leader is elected)."""
    (tmp_path / "last_known.py").write_text(LAST_KNOWN)
    r = isrcheck("check", "--spec", "last_known.py:LastKnown", "--invariant", "last-known-leader-kept",
                 "--max-crashes", "2", "--max-records", "1", "--log-size", "1", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["verdicts"] == {"last-known-leader-kept": "holds"} and report["never_fired"] == []


def test_the_last_known_leader_is_elected_without_the_records_it_lost(tmp_path):
    """Configuration last-known-leader: both replicas lose a committed record in hard crashes; the controller
    elects the last known leader again (4.0), as Kafka did before 4.0 with every replica offline."""
    r = isrcheck("check", "--spec", "kafka-4.0", "--invariant", "no-committed-loss", "--max-crashes", "2",
                 "--max-records", "1", "--log-size", "1", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "configuration last-known-leader" in words(r.stdout)
    path = tmp_path / "isrcheck-out" / "kafka-4.0" / "no-committed-loss.itf.json"
    names = [n for n, _, _ in traces.load(str(path)).steps]
    assert names.count("crash") == 2 and "elect_last_known_leader" in names
    shown = isrcheck("show", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "the controller elects r0, the last known leader (lastKnownElr, KIP-966)" in words(shown.stdout)
