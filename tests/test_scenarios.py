"""Known Kafka replication bugs replayed as explicit action sequences on the scalar backend.

Each scenario is written as Kafka events (action labels as ``isrcheck show``
prints them) and replayed with ``backends.action_named`` and the scalar backend's ``step``; every
step must be enabled. A protocol version that has the bug reaches a state that
breaks the invariant exactly at the step that does the damage; a version that
fixed it either runs the same events and keeps the invariant at every step, or
refuses the very step the fix fences off.

Bounds are always given explicitly, so the scenarios do not depend on a spec's
defaults.
"""
from __future__ import annotations

import functools
import re

import pytest

from isrcheck.model.kraft import KRaftReplication
from isrcheck.specs import SPECS
from isrcheck.model import backends


@functools.lru_cache(maxsize=None)
def _load(name, bounds):
    return SPECS[name](**dict(bounds))


def load(name, **bounds):
    """SPECS[name](**bounds), loaded once per bounds (loading runs the z3 declaration checks)."""
    return _load(name, tuple(sorted(bounds.items())))


# ------------------------------------------------------------------------------------------
# replay helpers
# ------------------------------------------------------------------------------------------
_LABEL = re.compile(r"\s*(\w+)\((.*)\)\s*")


def parse(label):
    """'fetch(f=1, l=0)' -> ('fetch', {'f': 1, 'l': 0})."""
    m = _LABEL.fullmatch(label)
    assert m, f"malformed step {label!r}"
    params = {}
    for part in filter(None, (p.strip() for p in m.group(2).split(","))):
        key, value = part.split("=")
        params[key.strip()] = int(value)
    return m.group(1), params


def instance(spec, label):
    name, params = parse(label)
    inst = backends.action_named(spec, name, params)
    assert inst is not None, f"{spec.name}: no action instance {label}"
    return inst


def replay(spec, steps, start=None):
    """Rows reached by the steps: rows[0] is the start (initial state), rows[i] follows steps[i-1]."""
    row = backends.scalar(spec).initial_row() if start is None else start
    rows = [row]
    for i, label in enumerate(steps):
        nxt = backends.scalar(spec).step(row, instance(spec, label))
        assert nxt is not None, (f"{spec.name}: step {i + 1} {label} is not enabled in state "
                                 f"{spec.layout.decode(row)}")
        row = nxt
        rows.append(row)
    return rows


def refused(spec, row, label):
    """The action instance exists in the spec but is disabled in this state."""
    return backends.scalar(spec).step(row, instance(spec, label)) is None


def holds(spec, row, name):
    return backends.scalar(spec).holds(row, spec.invariants[name])


def first_violation(spec, rows, name):
    """Index of the first row breaking the invariant (None if it holds throughout)."""
    return next((i for i, row in enumerate(rows) if not holds(spec, row, name)), None)


def state(spec, row):
    return spec.layout.decode(row)


# ------------------------------------------------------------------------------------------
# KIP-101 scenario 1: a bounced follower truncates to its lagging HW and is then elected
# ------------------------------------------------------------------------------------------
SC1_BOUNDS = dict(replicas=2, max_crashes=2, max_epochs=3, log_size=2, max_records=2)
SC1_START = ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)", "apply_leader_and_isr(r=1, e=1)"]
SC1_REPLICATE = ["produce(l=0)",
                 "fetch(f=1, l=0)",          # replica 1 gets m1; the leader learns it is at offset 0
                 "fetch(f=1, l=0)"]          # leader HW -> 1, m1 acknowledged; the response carried HW 0
SC1_BOUNCE = ["crash(r=1)", "restart(r=1)",
              "apply_leader_and_isr(r=1, e=1)"]   # the controller resends the current request on startup
SC1_FAILOVER = ["crash(r=0)", "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)"]


def test_kip101_scenario1_breaks_no_committed_loss_on_hw_truncation():
    spec = load("hw-truncation", **SC1_BOUNDS)
    steps = SC1_START + SC1_REPLICATE + SC1_BOUNCE + SC1_FAILOVER
    rows = replay(spec, steps)
    after_replication = state(spec, rows[len(SC1_START + SC1_REPLICATE)])
    assert after_replication["hw"] == [1, 0] and after_replication["acked_at"][0] == 0
    assert after_replication["log_record"][1][0] == 1
    after_bounce = state(spec, rows[len(SC1_START + SC1_REPLICATE + SC1_BOUNCE)])
    assert after_bounce["leo"][1] == 0, "pre-0.11 the returning follower truncates to its HW (0)"
    # the acknowledged record is gone exactly when replica 1 takes over in epoch 2
    assert first_violation(spec, rows, "no-committed-loss") == len(steps)
    final = state(spec, rows[-1])
    assert final["q_leader"] == 1 and final["leo"][1] == 0 and final["acked_at"][0] == 0


@pytest.mark.parametrize("variant", ["follower truncates by epoch", "leader dies before it can"])
def test_kip101_scenario1_keeps_committed_records_on_kip_101(variant):
    spec = load("kip-101", **SC1_BOUNDS)
    # 0.11+: a new follower must send OffsetsForLeaderEpoch before its first fetch
    start = SC1_START + ["truncate_by_epoch(f=1, l=0)"]
    bounce = SC1_BOUNCE + (["truncate_by_epoch(f=1, l=0)"] if variant == "follower truncates by epoch" else [])
    steps = start + SC1_REPLICATE + bounce + SC1_FAILOVER
    rows = replay(spec, steps)
    assert first_violation(spec, rows, "no-committed-loss") is None
    final = state(spec, rows[-1])
    assert final["q_leader"] == 1 and final["acked_at"][0] == 0
    assert final["log_record"][1][0] == 1, "the new leader still holds the acknowledged record"


def test_kip101_scenario1_follower_cannot_fetch_before_truncating_on_kip_101():
    """0.11+: the fetcher starts in the truncating state; fetching first is not possible."""
    spec = load("kip-101", **SC1_BOUNDS)
    rows = replay(spec, SC1_START + ["produce(l=0)"])
    assert refused(spec, rows[-1], "fetch(f=1, l=0)")
    assert not refused(spec, rows[-1], "truncate_by_epoch(f=1, l=0)")


# ------------------------------------------------------------------------------------------
# KIP-101 scenario 2: both replicas lose power; the one that lost its unflushed tail comes back
# first and takes new writes; the other truncates to its HW and keeps a record nobody else has
# ------------------------------------------------------------------------------------------
SC2_BOUNDS = dict(replicas=2, unflushed_loss=1, max_crashes=2, max_records=4, log_size=3, max_epochs=3)
SC2_WRITE = ["produce(l=0)", "fetch(f=1, l=0)",           # m1 on both
             "flush(r=1)",                                # replica 1 fsyncs m1
             "produce(l=0)", "fetch(f=1, l=0)", "fetch(f=1, l=0)",   # m2 on both, leader HW 2
             "flush(r=0)", "checkpoint_hw(r=0)"]          # leader fsyncs and checkpoints HW 2
SC2_POWER_FAILURE = ["crash(r=0)", "crash(r=1)",          # replica 1 loses unflushed m2
                     "controller_offline(r=0)",           # partition offline, ISR {1}
                     "restart(r=1)", "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=3)",
                     "produce(l=1)",                      # m3 at offset 1, epoch 3
                     "restart(r=0)", "apply_leader_and_isr(r=0, e=3)"]
SC2_END = ["produce(l=1)", "fetch(f=0, l=1)"]             # m4 at offset 2, replicated to replica 0


def test_kip101_scenario2_breaks_log_matching_on_hw_truncation():
    spec = load("hw-truncation", **SC2_BOUNDS)
    steps = SC1_START + SC2_WRITE + SC2_POWER_FAILURE + SC2_END
    rows = replay(spec, steps)
    before_crash = state(spec, rows[len(SC1_START + SC2_WRITE)])
    assert before_crash["hw"][0] == 2 and before_crash["checkpoint_hw"][0] == 2 and before_crash["flushed"] == [2, 1]
    final = state(spec, rows[-1])
    assert final["log_record"] == [[1, 2, 4], [1, 3, 4]]
    assert final["log_epoch"] == [[1, 1, 3], [1, 3, 3]]
    # offset 2 holds epoch 3 on both, the prefixes differ: broken by the final fetch, not before
    assert first_violation(spec, rows, "log-matching") == len(steps)


@pytest.mark.parametrize("name", ["kip-101", "kip-279", "kip-320"])
def test_kip101_scenario2_keeps_log_matching_with_epoch_truncation(name):
    spec = load(name, **SC2_BOUNDS)
    steps = (SC1_START + ["truncate_by_epoch(f=1, l=0)"] + SC2_WRITE + SC2_POWER_FAILURE
             + ["produce(l=1)", "truncate_by_epoch(f=0, l=1)", "fetch(f=0, l=1)"])
    rows = replay(spec, steps)
    assert first_violation(spec, rows, "log-matching") is None
    final = state(spec, rows[-1])
    assert final["log_record"] == [[1, 3, 4], [1, 3, 4]], "replica 0 dropped m2 (epoch 1) where the leader has m3"
    # Not a protocol bug: both replicas lost power and the only copy of m2 (acknowledged,
    # below the HW) was never fsynced on replica 1. Every version loses it, from the moment
    # replica 1 acts as leader in epoch 3.
    taken_over = len(SC1_START) + 1 + len(SC2_WRITE) + SC2_POWER_FAILURE.index("apply_leader_and_isr(r=1, e=3)") + 1
    assert first_violation(spec, rows, "no-committed-loss") == taken_over


def test_kip101_scenario2_follower_must_truncate_before_fetching_on_kip_101():
    spec = load("kip-101", **SC2_BOUNDS)
    rows = replay(spec, SC1_START + ["truncate_by_epoch(f=1, l=0)"] + SC2_WRITE + SC2_POWER_FAILURE
                  + ["produce(l=1)"])
    assert refused(spec, rows[-1], "fetch(f=0, l=1)")
    assert state(spec, rows[-1])["log_record"][0] == [1, 2, 0], "0.11+ keeps the log until the leader answers"


# ------------------------------------------------------------------------------------------
# KAFKA-6361: fast leader fail-over; KIP-101's answer carries no epoch, so the logs diverge
# ------------------------------------------------------------------------------------------
KAFKA_6361_BOUNDS = dict(replicas=2, log_size=3, max_records=4, max_epochs=3, max_crashes=0)
KAFKA_6361 = (SC1_START + ["truncate_by_epoch(f=1, l=0)",
              "produce(l=0)", "fetch(f=1, l=0)",      # m1 on both
              "produce(l=0)",                         # m2 on replica 0 only
              "elect_leader(l=1)",                    # replica 0's session expires; it never hears of epoch 2
              "apply_leader_and_isr(r=1, e=2)", "produce(l=1)",      # m3 at offset 1, epoch 2
              "elect_leader(l=0)",                    # fast fail-over back to replica 0, still holding m2
              "apply_leader_and_isr(r=0, e=3)", "produce(l=0)",      # m4 at offset 2, epoch 3
              "apply_leader_and_isr(r=1, e=3)", "truncate_by_epoch(f=1, l=0)",
              "fetch(f=1, l=0)"])


def test_kafka_6361_diverges_on_kip_101():
    spec = load("kip-101", **KAFKA_6361_BOUNDS)
    rows = replay(spec, KAFKA_6361)
    truncated = state(spec, rows[-2])
    # asked for epoch 2, replica 0 answers the start of its next larger epoch (3), offset 2: m3 survives
    assert truncated["log_record"][1] == [1, 3, 0]
    final = state(spec, rows[-1])
    assert final["log_epoch"] == [[1, 1, 3], [1, 2, 3]]
    assert first_violation(spec, rows, "log-matching") == len(KAFKA_6361)


@pytest.mark.parametrize("name", ["kip-279", "kip-320"])
def test_kafka_6361_fixed_by_kip_279(name):
    spec = load(name, **KAFKA_6361_BOUNDS)
    rows = replay(spec, KAFKA_6361)
    # the answer (epoch 1, end offset 2) makes replica 1 look up its own end of epoch 1: offset 1
    assert state(spec, rows[-2])["log_record"][1] == [1, 0, 0]
    assert state(spec, rows[-1])["log_record"] == [[1, 2, 4], [1, 2, 4]]
    assert first_violation(spec, rows, "log-matching") is None


# ------------------------------------------------------------------------------------------
# KAFKA-7415: a new leader that has not written in its epoch answers UNDEFINED for a newer
# follower epoch; the follower falls back to its HW and drops a committed record
# ------------------------------------------------------------------------------------------
KAFKA_7415_BOUNDS = dict(replicas=2, log_size=2, max_records=2, max_epochs=4, max_crashes=1)
KAFKA_7415_SETUP = (SC1_START + ["truncate_by_epoch(f=1, l=0)",
                    "produce(l=0)", "fetch(f=1, l=0)", "fetch(f=1, l=0)",   # m1 committed, replica 1's HW 0
                    "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)",
                    "produce(l=1)",                        # m2 at offset 1, epoch 2, never replicated
                    "elect_leader(l=0)"])                  # back to replica 0 in epoch 3
KAFKA_7415_END = ["crash(r=0)", "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=4)"]
KAFKA_7415 = KAFKA_7415_SETUP + ["apply_leader_and_isr(r=0, e=3)", "apply_leader_and_isr(r=1, e=3)",
                                 "truncate_by_epoch(f=1, l=0)"] + KAFKA_7415_END


@pytest.mark.parametrize("name", ["kip-101", "kip-279"])
def test_kafka_7415_loses_committed_record_before_kip_320(name):
    spec = load(name, **KAFKA_7415_BOUNDS)
    rows = replay(spec, KAFKA_7415)
    truncated = state(spec, rows[len(KAFKA_7415) - len(KAFKA_7415_END)])
    assert truncated["leo"][1] == 0, "UNDEFINED answer: replica 1 truncated to its HW 0, dropping m1"
    assert first_violation(spec, rows, "no-committed-loss") == len(KAFKA_7415)


# the KRaft-era family truncates on fetch (no OffsetsForLeaderEpoch step): tests/test_kraft.py covers it
KIP_320_DERIVED = sorted(n for n, cls in SPECS.items() if getattr(cls, "epoch_cached_on_election", False)
                         and not issubclass(cls, KRaftReplication))


@pytest.mark.parametrize("name", KIP_320_DERIVED)
def test_kafka_7415_fixed_in_every_kip_320_derived_spec(name):
    spec = load(name, **KAFKA_7415_BOUNDS)
    rows = replay(spec, KAFKA_7415)
    truncated = state(spec, rows[len(KAFKA_7415) - len(KAFKA_7415_END)])
    assert truncated["log_record"][1] == [1, 0], "the leader's cached epoch 3 starts at offset 1: m1 stays"
    final = state(spec, rows[-1])
    assert final["acked_at"][0] == 0 and final["log_record"][1][0] == 1 and final["q_leader"] == 1
    if spec.acks_all:
        assert first_violation(spec, rows, "no-committed-loss") is None
    else:
        # acks=1 (by design): m2, acknowledged on replica 1's append in epoch 2, is gone as soon as
        # replica 0 acts as leader in epoch 3; that is the acks-1 spec's point, not KAFKA-7415
        assert final["acked_at"][1] == 1
        assert first_violation(spec, rows, "no-committed-loss") == KAFKA_7415.index("apply_leader_and_isr(r=0, e=3)") + 1


def test_kip_320_derived_specs_found():
    assert "kip-320" in KIP_320_DERIVED and "kip-279" not in KIP_320_DERIVED and len(KIP_320_DERIVED) >= 2


# ------------------------------------------------------------------------------------------
# KIP-320 fetch fencing: a follower on a newer epoch asks a deposed leader that has not yet
# applied the new epoch, gets UNDEFINED and truncates committed records to its HW
# ------------------------------------------------------------------------------------------
STALE_ASK = KAFKA_7415_SETUP + ["apply_leader_and_isr(r=1, e=3)", "truncate_by_epoch(f=1, l=0)"]


@pytest.mark.parametrize("name", ["kip-101", "kip-279"])
def test_follower_truncates_on_stale_leaders_answer_without_fencing(name):
    spec = load(name, **KAFKA_7415_BOUNDS)
    rows = replay(spec, STALE_ASK + KAFKA_7415_END)
    assert state(spec, rows[len(STALE_ASK)])["leader_epoch"] == [1, 3]
    assert state(spec, rows[len(STALE_ASK)])["leo"][1] == 0
    assert first_violation(spec, rows, "no-committed-loss") == len(rows) - 1


def test_kip_320_fences_the_stale_leader_until_it_applies_the_new_epoch():
    spec = load("kip-320", **KAFKA_7415_BOUNDS)
    rows = replay(spec, STALE_ASK[:-1])
    # everything else about the request is as on kip-279, where the same step is enabled (test above)
    assert refused(spec, rows[-1], "truncate_by_epoch(f=1, l=0)"), "leader on epoch 1, follower on epoch 3"
    rows = replay(spec, ["apply_leader_and_isr(r=0, e=3)", "truncate_by_epoch(f=1, l=0)"] + KAFKA_7415_END,
                  start=rows[-1])
    assert first_violation(spec, rows, "no-committed-loss") is None
    assert state(spec, rows[-1])["log_record"][1][0] == 1


# ------------------------------------------------------------------------------------------
# KAFKA-7128: a follower rejoins the ISR once it reaches the new leader's lagging HW
# ------------------------------------------------------------------------------------------
KAFKA_7128_BOUNDS = dict(replicas=3, log_size=1, max_records=1, max_epochs=3, max_crashes=0,
                         fetch_response_loss=1)
KAFKA_7128 = (SC1_START + ["truncate_by_epoch(f=1, l=0)",
              "produce(l=0)", "fetch(f=1, l=0)",
              "shrink_isr(l=0, f=2)",                 # replica 2 has not fetched: out of the ISR
              "fetch(f=1, l=0)",                      # m1 committed on {0, 1}; replica 1's HW still 0
              "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)",     # new leader, HW 0
              "apply_leader_and_isr(r=2, e=2)", "truncate_by_epoch(f=2, l=1)",
              "fetch_response_lost(f=2, l=1)"])      # replica 2 at offset 0 >= HW 0: back in the ISR?
KAFKA_7128_END = ["elect_leader(l=2)", "apply_leader_and_isr(r=2, e=3)"]


def test_kafka_7128_lagging_hw_lets_follower_rejoin_isr_on_kafka_7128():
    spec = load("kafka-7128", **KAFKA_7128_BOUNDS)
    rows = replay(spec, KAFKA_7128 + KAFKA_7128_END)
    joined = state(spec, rows[len(KAFKA_7128)])
    assert joined["q_isr"] == [True, True, True] and joined["leo"][2] == 0
    assert first_violation(spec, rows, "no-committed-loss") == len(rows) - 1


def test_kafka_7128_fixed_in_kip_320():
    spec = load("kip-320", **KAFKA_7128_BOUNDS)
    rows = replay(spec, KAFKA_7128)
    assert state(spec, rows[-1])["q_isr"] == [True, True, False], "offset 0 is below the epoch start (1)"
    assert refused(spec, rows[-1], "elect_leader(l=2)")
    assert first_violation(spec, rows, "no-committed-loss") is None


# ------------------------------------------------------------------------------------------
# KAFKA-1382: a deposed leader's ISR write must fail on its stale zkVersion
# ------------------------------------------------------------------------------------------
ZOMBIE_LEADER_START = SC1_START + ["elect_leader(l=1)"]       # replica 0 still believes it leads


@pytest.mark.parametrize("name", ["hw-truncation", "kip-101", "kip-279", "kip-320"])
def test_deposed_leader_cannot_shrink_isr(name):
    spec = load(name, replicas=2, max_epochs=2)
    rows = replay(spec, ZOMBIE_LEADER_START)
    final = state(spec, rows[-1])
    assert final["leader"][0] == 0 and final["q_leader"] == 1
    assert refused(spec, rows[-1], "shrink_isr(l=0, f=1)")


def test_deposed_leader_shrinks_isr_and_commits_alone_on_no_isr_fencing():
    spec = load("no-isr-fencing", replicas=2, max_epochs=2)
    steps = ZOMBIE_LEADER_START + ["shrink_isr(l=0, f=1)", "produce(l=0)", "apply_leader_and_isr(r=1, e=2)"]
    rows = replay(spec, steps)
    assert first_violation(spec, rows, "leader-in-isr") == len(ZOMBIE_LEADER_START) + 1
    assert state(spec, rows[-2])["acked_at"][0] == 0, "the zombie acknowledged m1 with an ISR of itself"
    assert first_violation(spec, rows, "no-committed-loss") == len(steps)


# ------------------------------------------------------------------------------------------
# KAFKA-1188: a deposed controller's in-flight LeaderAndIsr must be rejected by controller epoch
# ------------------------------------------------------------------------------------------
ZOMBIE_CONTROLLER = ["controller_failover(l=0)",       # the old controller's request names replica 0 for epoch 1
                     "elect_leader(l=1)"]               # the new controller names replica 1 for epoch 1


def test_stale_controller_request_splits_the_epoch_on_zombie_controller():
    spec = load("zombie-controller", replicas=2, max_epochs=2, controller_failover=1)
    steps = ZOMBIE_CONTROLLER + ["apply_stale_leader_and_isr(r=0)", "apply_leader_and_isr(r=1, e=1)"]
    rows = replay(spec, steps)
    assert state(spec, rows[-1])["leader_epoch"] == [1, 1]
    assert first_violation(spec, rows, "single-leader-per-epoch") == len(steps)


def test_stale_controller_request_rejected_on_kip_320():
    spec = load("kip-320", replicas=2, max_epochs=2, controller_failover=1)
    rows = replay(spec, ZOMBIE_CONTROLLER)
    assert refused(spec, rows[-1], "apply_stale_leader_and_isr(r=0)")
    assert refused(spec, rows[-1], "apply_stale_leader_and_isr(r=1)")
    rows = replay(spec, ["apply_leader_and_isr(r=0, e=1)", "apply_leader_and_isr(r=1, e=1)"], start=rows[-1])
    assert first_violation(spec, rows, "single-leader-per-epoch") is None


# ------------------------------------------------------------------------------------------
# acks=1 and unclean leader election: loss by design, absent from the defaults
# ------------------------------------------------------------------------------------------
ACKS_1 = ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)", "produce(l=0)",
          "crash(r=0)", "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)"]


def test_acks_1_loses_record_acknowledged_on_leader_append():
    spec = load("acks-1", replicas=2, max_epochs=2, acks_all=0)
    rows = replay(spec, ACKS_1)
    assert state(spec, rows[3])["acked_at"][0] == 0
    assert first_violation(spec, rows, "no-committed-loss") == len(ACKS_1)


def test_acks_all_does_not_acknowledge_before_replication():
    spec = load("kip-320", replicas=2, max_epochs=2, acks_all=1)
    rows = replay(spec, ACKS_1)
    assert all(state(spec, r)["acked_at"] == [-1, -1] for r in rows)
    assert first_violation(spec, rows, "no-committed-loss") is None


UNCLEAN = ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)", "shrink_isr(l=0, f=1)",
           "produce(l=0)", "crash(r=0)"]


def test_unclean_election_loses_committed_record():
    spec = load("unclean-election", replicas=2, max_epochs=2, unclean=1)
    steps = UNCLEAN + ["elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)"]
    rows = replay(spec, steps)
    assert state(spec, rows[len(UNCLEAN)])["acked_at"][0] == 0
    assert first_violation(spec, rows, "no-committed-loss") == len(steps)


def test_clean_election_refuses_replica_outside_isr():
    spec = load("kip-320", replicas=2, max_epochs=2, unclean=0)
    rows = replay(spec, UNCLEAN)
    assert refused(spec, rows[-1], "elect_leader(l=1)")
    rows = replay(spec, ["controller_offline(r=0)"], start=rows[-1])
    assert state(spec, rows[-1])["q_isr"] == [True, False], "the last ISR member stays in the ISR"
    assert first_violation(spec, rows, "no-committed-loss") is None


# ------------------------------------------------------------------------------------------
# KIP-497: AlterIsr in flight; the HW must count the replica being added (maximal ISR)
# ------------------------------------------------------------------------------------------
ASYNC_ISR = (SC1_START + ["truncate_by_epoch(f=1, l=0)",
             "shrink_isr(l=0, f=1)", "alter_isr(l=0)",   # ISR {0}
             "fetch(f=1, l=0)",                          # replica 1 caught up (empty log): AlterIsr {0, 1} sent
             "produce(l=0)",                             # m1 while the expansion is pending
             "alter_isr(l=0)",                           # controller commits ISR {0, 1}
             "crash(r=0)", "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)"])
COMMITTED_EXPANSION = ASYNC_ISR.index("crash(r=0)")


def test_pending_isr_expansion_commits_member_lacking_acked_record_on_async_isr():
    spec = load("async-isr", replicas=2, max_epochs=2, async_isr=1)
    rows = replay(spec, ASYNC_ISR)
    assert state(spec, rows[COMMITTED_EXPANSION - 1])["acked_at"][0] == 0, "HW rose over the old ISR {0}"
    assert first_violation(spec, rows, "strong-isr") == COMMITTED_EXPANSION
    assert first_violation(spec, rows, "no-committed-loss") == len(ASYNC_ISR)


def test_maximal_isr_holds_back_the_hw_on_kip_497():
    spec = load("kip-497", replicas=2, max_epochs=2, async_isr=1)
    rows = replay(spec, ASYNC_ISR)
    assert all(state(spec, r)["acked_at"][0] == -1 for r in rows)
    for name in ("strong-isr", "no-committed-loss"):
        assert first_violation(spec, rows, name) is None, name


# ------------------------------------------------------------------------------------------
# KIP-966: the last ISR member loses its unflushed tail and is re-elected
# ------------------------------------------------------------------------------------------
LRS_BOUNDS = dict(replicas=2, min_isr=2, unflushed_loss=1, max_epochs=3, max_crashes=1)
LAST_REPLICA = (SC1_START + ["truncate_by_epoch(f=1, l=0)",
                "produce(l=0)", "fetch(f=1, l=0)", "fetch(f=1, l=0)",   # m1 committed with ISR {0, 1}
                "shrink_isr(l=0, f=1)",                                 # ISR {0}, below min.insync.replicas
                "crash(r=0)",                                           # m1 was never fsynced on replica 0
                "controller_offline(r=0)", "restart(r=0)"])


@pytest.mark.parametrize("name", ["last-replica-standing", "kip-320"])
def test_last_replica_standing_reelected_after_losing_committed_record(name):
    spec = load(name, **LRS_BOUNDS)
    steps = LAST_REPLICA + ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=3)"]
    rows = replay(spec, steps)
    assert state(spec, rows[len(LAST_REPLICA)])["q_isr"] == [True, False]
    assert first_violation(spec, rows, "no-committed-loss") == len(steps)


def test_kip_966_elects_the_eligible_replica_instead():
    spec = load("kip-966", **LRS_BOUNDS, elr=1)
    rows = replay(spec, LAST_REPLICA)
    mid = state(spec, rows[-1])
    assert mid["q_isr"] == [False, False] and mid["q_elr"] == [False, True]
    assert refused(spec, rows[-1], "elect_leader(l=0)")
    rows = replay(spec, ["elect_leader(l=1)", "apply_leader_and_isr(r=1, e=3)"], start=rows[-1])
    assert first_violation(spec, rows, "no-committed-loss") is None
    assert state(spec, rows[-1])["log_record"][1][0] == 1


# ------------------------------------------------------------------------------------------
# Partition.makeFollower: a LeaderAndIsr that keeps the leader, per version
# ------------------------------------------------------------------------------------------
SAME_LEADER_BOUNDS = dict(replicas=3, max_crashes=1, max_epochs=2, log_size=2, max_records=2)


@pytest.mark.parametrize("name, truncates", [("hw-truncation", False), ("kip-101", False), ("kip-279", False),
                                             ("kafka-2.0.1", False), ("kip-320", True)])
def test_a_leader_and_isr_that_keeps_the_leader_truncates_only_from_2_1(name, truncates):
    """The controller drops a dead follower (epoch 2, same leader): up to 2.0.0 the other follower goes on
    fetching with its log and HW as they are (makeFollower returns false); 2.1 starts over with
    OffsetsForLeaderEpoch."""
    spec = load(name, **SAME_LEADER_BOUNDS)
    by_epoch = name != "hw-truncation"
    start = ["elect_leader(l=0)"] + [f"apply_leader_and_isr(r={r}, e=1)" for r in range(3)]
    steps = start + (["truncate_by_epoch(f=1, l=0)"] if by_epoch else []) + [
        "produce(l=0)", "fetch(f=1, l=0)",                   # r1 holds record 1; its HW (0) lags
        "crash(r=2)", "controller_shrink_isr(r=2)", "apply_leader_and_isr(r=1, e=2)"]
    rows = replay(spec, steps)
    before, after = state(spec, rows[-2]), state(spec, rows[-1])
    assert (before["leader"][1], before["hw"][1], before["leo"][1]) == (0, 0, 1)
    assert (after["leader"][1], after["leader_epoch"][1]) == (0, 2)
    assert after["leo"][1] == 1, "no version truncates the follower's log on this request itself"
    assert after["truncating"][1] == truncates
    if truncates:       # 2.1: OffsetsForLeaderEpoch again, once the leader is on epoch 2; its answer keeps the record
        more = replay(spec, ["apply_leader_and_isr(r=0, e=2)", "truncate_by_epoch(f=1, l=0)"], start=rows[-1])
        assert (state(spec, more[-1])["leo"][1], state(spec, more[-1])["truncating"][1]) == (1, False)


@pytest.mark.parametrize("name, truncates", [("kip-279", False), ("kafka-2.0.1", True), ("kip-320", True)])
def test_a_follower_that_missed_an_epoch_of_the_same_leader_truncates_from_2_0_1(name, truncates):
    """KAFKA-7164 (2.0.1): r1 misses epoch 2 (led by r2) and applies epoch 3, led by r0 again: the leader is
    unchanged but the epoch moved by two, so 2.0.1 restarts the fetcher (OffsetsForLeaderEpoch first); 2.0.0
    goes on fetching."""
    spec = load(name, replicas=3, max_crashes=1, max_epochs=3, log_size=2, max_records=2)
    steps = ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)", "apply_leader_and_isr(r=1, e=1)",
             "truncate_by_epoch(f=1, l=0)", "produce(l=0)", "fetch(f=1, l=0)",
             "elect_leader(l=2)", "elect_leader(l=0)", "apply_leader_and_isr(r=1, e=3)"]
    rows = replay(spec, steps)
    after = state(spec, rows[-1])
    assert (after["leader"][1], after["leader_epoch"][1], after["leo"][1]) == (0, 3, 1)
    assert after["truncating"][1] == truncates


def test_epoch_start_offset_is_the_leaders_leo_at_make_leader():
    """KAFKA-7128's fence (2.0.1+) compares with the LEO the leader had when it took its epoch, also when a bounced
    leader re-applies its own epoch with a record of that epoch already in its log (before 2.2 a fast bounce
    can go unnoticed): a follower below that LEO does not rejoin the ISR."""
    spec = load("kip-320", replicas=2, max_crashes=1, max_epochs=2, log_size=2, max_records=2)
    steps = ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)", "apply_leader_and_isr(r=1, e=1)",
             "truncate_by_epoch(f=1, l=0)", "produce(l=0)", "shrink_isr(l=0, f=1)",
             "crash(r=0)", "restart(r=0)", "apply_leader_and_isr(r=0, e=1)"]
    rows = replay(spec, steps + ["fetch(f=1, l=0)", "fetch(f=1, l=0)"])
    bounced = state(spec, rows[len(steps)])
    assert (bounced["leader"][0], bounced["leader_epoch"][0], bounced["log_epoch"][0][0]) == (0, 1, 1)
    # its record already has the epoch: makeLeader's assign(1, 1) adds no entry at the LEO
    assert bounced["epoch_start"][0] == 1 and bounced["epoch_cache"][0] == [0, -1]
    assert state(spec, rows[-2])["q_isr"] == [True, False], "fetch offset 0 is below the epoch start offset 1"
    assert state(spec, rows[-1])["q_isr"] == [True, True]


# ------------------------------------------------------------------------------------------
# Log.truncateTo and the follower's HW: clamped to the new LEO only from 2.4
# ------------------------------------------------------------------------------------------
HW_PAST_LEO_BOUNDS = dict(replicas=2, log_size=2, max_records=2, max_epochs=3, max_crashes=3, unflushed_loss=1)
#: r1 holds record 1 below its HW (1, checkpointed); r0 loses it in a hard crash, bounces unnoticed (2.1) and leads
#: epoch 1 again with an empty log; r1 comes back and truncates to r0's end of epoch 1 (offset 0), below its HW
HW_PAST_LEO = ["elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)", "apply_leader_and_isr(r=1, e=1)",
               "truncate_by_epoch(f=1, l=0)", "produce(l=0)", "fetch(f=1, l=0)", "fetch(f=1, l=0)", "fetch(f=1, l=0)",
               "shutdown(r=1)", "crash(r=0)", "restart(r=0)", "apply_leader_and_isr(r=0, e=1)", "restart(r=1)",
               "apply_leader_and_isr(r=1, e=1)", "truncate_by_epoch(f=1, l=0)"]


def test_truncation_clamps_the_hw_only_from_2_4():
    """The versions' flags: 2.4+ (kip-497, kip-966) clamp, the older ones do not."""
    clamps = {name: SPECS[name].truncation_clamps_hw for name in
              ("hw-truncation", "kip-101", "kip-279", "kip-320", "kafka-7128", "kip-497", "kip-966")}
    assert clamps == {"hw-truncation": False, "kip-101": False, "kip-279": False, "kip-320": False,
                      "kafka-7128": False, "kip-497": True, "kip-966": True}
    assert SPECS["kafka-2.6.1"].truncation_clamps_hw and not SPECS["kafka-2.0.1"].truncation_clamps_hw


@pytest.mark.parametrize("clamps", [False, True])
def test_a_followers_hw_stays_past_its_leo_after_truncation_before_2_4(clamps):
    """2.1 (Replica.highWatermark): the truncation leaves r1's HW at 1 over an empty log; the next fetch response
    sets it to min(LEO, leader's HW), and makeLeader resets a HW past the LEO to the log start offset. 2.4+
    (Log.updateLogEndOffset) brings it down to the new LEO at once."""
    cls = type("Kip320Clamping" if clamps else "Kip320Copy", (SPECS["kip-320"],),
               {"name": "kip-320-x", "truncation_clamps_hw": clamps})
    spec = cls(**HW_PAST_LEO_BOUNDS)
    rows = replay(spec, HW_PAST_LEO)
    before, after = state(spec, rows[-2]), state(spec, rows[-1])
    assert (before["leo"][1], before["hw"][1], after["leo"][1]) == (1, 1, 0)
    assert after["hw"][1] == (0 if clamps else 1)
    assert holds(spec, rows[-1], "hw-log-matching"), "a HW past the LEO covers no record"
    fetched = replay(spec, ["produce(l=0)", "fetch(f=1, l=0)"], start=rows[-1])
    assert (state(spec, fetched[-1])["leo"][1], state(spec, fetched[-1])["hw"][1]) == (1, 0)
    elected = replay(spec, ["crash(r=0)", "elect_leader(l=1)", "apply_leader_and_isr(r=1, e=2)"], start=rows[-1])
    assert state(spec, elected[-2])["hw"][1] == (0 if clamps else 1)
    assert (state(spec, elected[-1])["leader"][1], state(spec, elected[-1])["hw"][1]) == (1, 0)


# ------------------------------------------------------------------------------------------
# KAFKA-10706: a follower's truncation never ends after elections without writes (fixed in 2.6.1/2.7.0)
# ------------------------------------------------------------------------------------------
#: r0 led epoch 3 without writing (its cache holds epoch 3 at its LEO, KAFKA-7415) and follows r1 in epoch 4; r1
#: never had epoch 3 and answers epoch 2 ending at offset 1, which r0 holds under epoch 1: "go round again"
KAFKA_10706 = ["elect_leader(l=0)", "elect_leader(l=1)", "elect_leader(l=0)", "elect_leader(l=1)",
               "apply_leader_and_isr(r=1, e=2)", "produce(l=1)", "apply_leader_and_isr(r=1, e=4)",
               "apply_leader_and_isr(r=0, e=1)", "produce(l=0)", "apply_leader_and_isr(r=0, e=3)",
               "apply_leader_and_isr(r=0, e=4)"]


def test_kafka_10706_fixed_from_2_6_1():
    """Log.truncateTo cleans the epoch cache at the LEO from 2.6.1 and 2.7.0 (apache/kafka#9633) on."""
    fixed = {name: SPECS[name].truncation_cleans_epoch_cache
             for name in ("kafka-2.0.1", "kip-320", "kafka-7128", "kafka-1120", "kafka-2.6.1", "kip-497", "kip-966")}
    assert fixed == {"kafka-2.0.1": False, "kip-320": False, "kafka-7128": False, "kafka-1120": False,
                     "kafka-2.6.1": True, "kip-497": True, "kip-966": True}


@pytest.mark.parametrize("name, ends", [("kafka-2.0.1", False), ("kip-320", False), ("kafka-2.6.1", True)])
def test_kafka_10706_truncation_at_the_leo_cleans_the_epoch_cache_from_2_6_1(name, ends):
    """Before the fix Log.truncateTo at the LEO returns early and keeps the cache entry, so the same
    OffsetsForLeaderEpoch comes back forever; 2.6.1 calls truncateFromEnd(LEO) anyway and the next request
    carries the epoch of r0's last record, whose end offset ends the truncation."""
    spec = load(name, replicas=2, log_size=2, max_records=2, max_epochs=4, max_crashes=1)
    rows = replay(spec, KAFKA_10706 + ["truncate_by_epoch(f=0, l=1)"])
    before, after = state(spec, rows[-2]), state(spec, rows[-1])
    assert (before["epoch_cache"][0][2], before["truncating"][0], before["leo"][0]) == (1, True, 1)   # epoch 3 at the LEO
    assert after["leo"][0] == 1 and after["truncating"][0]        # "go round again", no record dropped
    assert after["epoch_cache"][0][2] == (-1 if ends else 1)
    again = replay(spec, ["truncate_by_epoch(f=0, l=1)"], start=rows[-1])
    if ends:
        assert not state(spec, again[-1])["truncating"][0] and state(spec, again[-1])["leo"][0] == 0
    else:
        assert (again[-1] == rows[-1]).all(), "the same request, the same answer: the loop"


# ------------------------------------------------------------------------------------------
# the replay helper itself
# ------------------------------------------------------------------------------------------
def test_replay_names_the_disabled_step():
    spec = load("kip-320", replicas=2)
    with pytest.raises(AssertionError, match=r"step 2 produce\(l=1\) is not enabled"):
        replay(spec, ["elect_leader(l=0)", "produce(l=1)"])
    with pytest.raises(AssertionError, match="no action instance"):
        replay(spec, ["fetch(f=0, l=0, x=1)"])


# ------------------------------------------------------------------------------------------
# the explicit LeaderEpochFileCache (issue 17, departure 3), version by version
# ------------------------------------------------------------------------------------------
#: r1 leads epoch 2 and writes at offset 0 where r0 holds epoch 1, then follows r0 in epoch 3 (r0's cache {1:0, 3:1})
BELOW_FIRST_ENTRY = ["elect_leader(l=0)", "elect_leader(l=1)", "elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)",
                     "apply_leader_and_isr(r=1, e=2)", "produce(l=0)", "apply_leader_and_isr(r=0, e=3)",
                     "produce(l=0)", "produce(l=1)", "apply_leader_and_isr(r=1, e=3)", "truncate_by_epoch(f=1, l=0)"]


@pytest.mark.parametrize("name, diverges", [("kip-279", True), ("kafka-2.0.1", False)])
def test_end_offset_below_the_first_cache_entry_is_undefined_until_2_0_1(name, diverges):
    """r0 answers epoch 1 (ending at 1) for r1's epoch 2; r1's cache {2:0} starts above epoch 1. 2.0.0's endOffsetFor
    answers UNDEFINED (requestedEpoch < epochs.head.epoch) and getOffsetTruncationState keeps r1's log up to the
    leader's end offset: r1 keeps its epoch-2 record under r0's epoch-1 one. 2.0.1 answers (1, 0): r1 truncates."""
    spec = load(name, max_records=3)
    rows = replay(spec, BELOW_FIRST_ENTRY + ["fetch(f=1, l=0)"])
    before = state(spec, rows[-3])
    assert before["epoch_cache"][1][:3] == [-1, 0, -1] and before["epoch_cache"][0][0] == 0
    assert state(spec, rows[-2])["leo"][1] == (1 if diverges else 0)
    assert (first_violation(spec, rows, "log-matching") == len(rows) - 1) is diverges


KAFKA_7415_CONFLICT = ["elect_leader(l=0)", "elect_leader(l=1)", "elect_leader(l=0)", "apply_leader_and_isr(r=0, e=1)",
                       "apply_leader_and_isr(r=1, e=1)", "produce(l=0)", "truncate_by_epoch(f=1, l=0)",
                       "fetch(f=1, l=0)", "apply_leader_and_isr(r=1, e=2)", "apply_leader_and_isr(r=1, e=3)",
                       "produce(l=0)", "apply_leader_and_isr(r=0, e=3)", "truncate_by_epoch(f=1, l=0)",
                       "fetch(f=1, l=0)"]


@pytest.mark.parametrize("name, cache", [("kip-320", [1, -1, -1]), ("kafka-2.6.1", [0, -1, -1])])
def test_an_append_below_the_entry_at_the_leo_removes_its_own_epochs_entry_until_kafka_10706(name, cache):
    """r1 led epoch 2 without writing (makeLeader's entry {2:1} at its LEO), then follows r0 and truncates to its LEO.
    Before KAFKA-10706's fix that truncation keeps {2:1}, and appending r0's epoch-1 record at 1 makes
    truncateAndAppend (2.0.1+) drop every entry of epoch >= 1: the cache says epoch 1 starts at 1, not 0.
    2.6.1's truncateTo drops {2:1} first, and the append of epoch 1 is then no change."""
    spec = load(name, max_epochs=3)
    rows = replay(spec, KAFKA_7415_CONFLICT)
    assert state(spec, rows[-2])["epoch_cache"][1] == [0, 1 if cache[0] == 1 else -1, -1]
    assert state(spec, rows[-1])["epoch_cache"][1] == cache and state(spec, rows[-1])["log_epoch"][1] == [1, 1]


#: KAFKA-6880 on 2.0.0: r1, still on epoch 1, truncates and fetches from r0 on epoch 3 (no fencing), leads epoch 2
#: and writes record 3 after r0's epoch-3 record, which 2.0.0's cache ignores (epoch 2 is below its latest, 3)
KAFKA_6880 = ["elect_leader(l=0)", "elect_leader(l=1)", "elect_leader(l=0)", "apply_leader_and_isr(r=0, e=3)",
              "apply_leader_and_isr(r=1, e=1)", "produce(l=0)", "shrink_isr(l=0, f=1)", "truncate_by_epoch(f=1, l=0)",
              "fetch(f=1, l=0)", "apply_leader_and_isr(r=1, e=2)", "produce(l=0)", "produce(l=1)",
              "apply_leader_and_isr(r=1, e=3)", "truncate_by_epoch(f=1, l=0)", "fetch(f=1, l=0)"]


def test_kafka_6880_still_diverges_on_2_0_0_and_is_fenced_by_kip_320():
    """kip-279's kafka-6880 configuration finds a shorter divergence now (2.0.0's endOffsetFor below the first
    entry); KAFKA-6880's own path is still there: two replicas hold different records below both HWs."""
    spec = load("kip-279", max_records=3)
    rows = replay(spec, KAFKA_6880)
    assert first_violation(spec, rows, "hw-log-matching") == len(rows) - 1
    end = state(spec, rows[-1])
    assert end["log_record"] == [[1, 2], [1, 3]] and end["hw"] == [2, 2]
    assert end["epoch_cache"][1][:3] == [-1, -1, 0]           # r1's append of epoch 2 after epoch 3: ignored
    fenced = load("kip-320", max_records=3)
    rows = replay(fenced, KAFKA_6880[:7])
    assert refused(fenced, rows[-1], "truncate_by_epoch(f=1, l=0)")   # FENCED_LEADER_EPOCH: 1 != 3
