"""The KRaft family (model/kraft.py, model/kraft_metadata.py): each mechanism on a real state, the reviewer's probe,
and how ``show`` tells them.

Each test reaches its state by running named steps from the initial state on the scalar backend of the spec under
test (``run``), through the model's own actions, and then checks one step against what Kafka does (and what the
bug and fix versions do instead). The specs' verdicts at their bounds are the gate's job (``isrcheck gate``).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from isrcheck.checker.traces import trace as traces
from isrcheck.model import backends
from isrcheck.specs import SPECS
from isrcheck.specs.kafka_3_9 import PROBE, Kafka39

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED = os.path.join(ROOT, "counterexamples")


def isrcheck(*args, cwd):
    return subprocess.run(["isrcheck", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def words(text):
    """The text with its line wrapping undone."""
    return " ".join(text.split())


def step(name, **params):
    return name, params


def run(spec_name, steps, **bounds):
    """(spec, [decoded state after each step, the initial state first]); a disabled step fails the test."""
    spec = SPECS[spec_name](**bounds)
    sc = backends.scalar(spec)
    row = sc.initial_row()
    states = [spec.layout.decode(row)]
    for name, params in steps:
        row = sc.step(row, backends.action_named(spec, name, params))
        assert row is not None, f"{name}({params}) is disabled on {spec_name}"
        states.append(spec.layout.decode(row))
    return spec, states


def enabled(spec, state, name, **params):
    """Whether the action instance is enabled in the state (an instance disabled in every state is not loaded)."""
    inst = backends.action_named(spec, name, params)
    return inst is not None and backends.scalar(spec).step(spec.layout.encode(state), inst) is not None


def holds(spec, state, invariant):
    return backends.scalar(spec).holds(spec.layout.encode(state), spec.invariants[invariant])


# r0 leads epoch 1 of three replicas; r2 never fetches and leaves the ISR; the leader reads the controller's
# answer before its metadata listener applies the record; r2 fetches one record and is proposed for the ISR; the
# listener then applies the leader's own record, at the partition epoch the answer gave it already
PROBE_STEPS = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("produce", l=0),
               step("produce", l=0), step("apply_metadata", r=1, k=0), step("fetch", f=1, l=0),
               step("apply_metadata", r=2, k=0), step("lag_expires", l=0, f=2), step("maybe_shrink_isr", l=0),
               step("alter_partition", l=0), step("apply_metadata", r=1, k=0), step("apply_metadata", r=2, k=0),
               step("alter_partition_response", l=0), step("fetch_partial", f=2, l=0, end=1),
               step("fetch", f=1, l=0), step("apply_metadata", r=0, k=0), step("alter_partition", l=0)]
REAPPLY = 15                          # the index of the step makeLeader re-runs at (states[16] after it)


# --- the reviewer's probe: makeLeader on an equal partition epoch ------------------------------------------------
def test_the_probe_breaks_strong_isr_on_kafka_3_9_and_the_fix_keeps_the_pending_expansion():
    """3 replicas, min.insync.replicas=2, one leader epoch, no crash: kafka-3.9 breaks strong-isr; the same steps on
    kafka-3.9-keep-pending leave r2 in the leader's maximal ISR and the HW where r2 is."""
    spec, states = run("kafka-3.9", PROBE_STEPS, **PROBE)
    before, after, last = states[REAPPLY], states[REAPPLY + 1], states[-1]
    assert before["alter_pending"][0] and before["pending_isr"][0] == [True, True, True] and before["ap_sent"][0]
    assert before["pe_lag"][0] == 0 and before["img_lag"][0] == 1       # the answer came first: same partition epoch
    assert not after["alter_pending"][0] and after["isr"][0] == [True, True, False] and after["ap_sent"][0]
    assert after["hw"][0] == 2 > after["leo"][2] == 1                   # the HW passes r2's LEO
    assert last["q_isr"] == [True, True, True] and not holds(spec, last, "strong-isr")
    assert all(holds(spec, st, "strong-isr") for st in states[:-1])
    assert not holds(spec, last, "maximal-isr-covers-isr") and holds(spec, after, "maximal-isr-covers-isr")
    fixed, kept = run("kafka-3.9-keep-pending", PROBE_STEPS, **PROBE)
    assert kept[REAPPLY + 1]["alter_pending"][0] and kept[REAPPLY + 1]["hw"][0] == 0     # r2 fetched at offset 0
    assert holds(fixed, kept[-1], "strong-isr") and holds(fixed, kept[-1], "maximal-isr-covers-isr")


def test_kafka_4_0_loses_a_record_at_three_replicas_and_the_fix_keeps_it():
    """The finding's 22-step trace at min.insync.replicas=2 (91 million states to find: kept under docs/findings,
    replayed here): kafka-4.0 loses an acknowledged record; the same steps on kafka-4.0-keep-pending acknowledge
    nothing and break nothing."""
    trace = traces.load(os.path.join(ROOT, "docs", "findings", "makeleader-equal-epoch",
                                     "kafka-4.0-three-replicas.itf.json"))
    assert trace.spec == "kafka-4.0" and trace.bounds["replicas"] == 3 and trace.bounds["min_isr"] == 2
    steps = [(name, params) for name, params, _ in trace.steps[1:]]
    spec, states = run("kafka-4.0", steps, **trace.bounds)
    assert not holds(spec, states[-1], "no-committed-loss") and holds(spec, states[-2], "no-committed-loss")
    fixed, kept = run("kafka-4.0-keep-pending", steps, **trace.bounds)
    assert kept[-1]["acked_at"] == [-1, -1]
    assert all(holds(fixed, kept[-1], name) for name in fixed.invariants if name != "single-acting-leader")


def test_the_answer_to_a_replaced_pending_state_is_ignored():
    """Partition.submitAlterPartition's callback: partitionState != proposedIsrState, so the accepted expansion is
    not adopted; the request is done (AlterPartitionManager forgets it)."""
    spec, states = run("kafka-3.9", PROBE_STEPS + [step("alter_partition_response", l=0)], **PROBE)
    answered, read = states[-2], states[-1]
    assert answered["ap_resp"][0] == 1 and answered["q_isr"] == [True, True, True]
    assert read["isr"][0] == [True, True, False] and not read["ap_sent"][0] and read["pending_isr"][0] == [False] * 3
    # the record of the expansion, applied later, gives the leader the controller's ISR
    after = run("kafka-3.9", PROBE_STEPS + [step("alter_partition_response", l=0), step("apply_metadata", r=0, k=0)],
                **PROBE)[1][-1]
    assert after["isr"][0] == [True, True, True]


def test_a_smaller_partition_epoch_is_skipped_and_a_batch_lands_on_its_last_record():
    """makeLeader / makeFollower skip a record older than the Partition's partition epoch; a broker two records
    behind may apply both at once (metadata_lag=2), its Partition taking the last one only."""
    steps = PROBE_STEPS[:13] + [step("fetch_partial", f=2, l=0, end=1), step("alter_partition", l=0)]
    spec, states = run("kafka-3.9", steps, metadata_lag=2, **PROBE)
    s = states[-1]
    assert s["img_lag"][0] == 2 and s["pe_lag"][0] == 1                 # records A and B unapplied, knows A
    batch = run("kafka-3.9", steps + [step("apply_metadata", r=0, k=0)], metadata_lag=2, **PROBE)[1][-1]
    assert batch["isr"][0] == [True, True, True] and batch["pe_lag"][0] == 0 and batch["img_lag"][0] == 0
    one = run("kafka-3.9", steps + [step("apply_metadata", r=0, k=1)], metadata_lag=2, **PROBE)[1][-1]
    assert one["isr"][0] == [True, True, False] and not one["alter_pending"][0]     # A again: the pending one dropped


# --- AlterPartition ----------------------------------------------------------------------------------------------
def test_the_leader_drops_every_out_of_sync_follower_in_one_request():
    """Partition.maybeShrinkIsr proposes the ISR without all of getOutOfSyncReplicas at once."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("produce", l=0),
             step("lag_expires", l=0, f=1), step("lag_expires", l=0, f=2), step("maybe_shrink_isr", l=0)]
    spec, states = run("kafka-3.9", steps, **PROBE)
    assert states[-1]["pending_isr"][0] == [True, False, False]
    assert not enabled(spec, states[-1], "maybe_shrink_isr", l=0)      # one change at a time (isInflight)


def test_a_lost_answer_is_handled_again_and_then_the_partition_epoch_is_stale():
    """AlterPartitionManager resends after a lost answer; the controller, having committed the first, now answers
    INVALID_UPDATE_VERSION, and the leader stays pending until its metadata listener applies the record."""
    steps = PROBE_STEPS[:10] + [step("alter_partition_response_lost", l=0), step("apply_metadata", r=1, k=0),
                                step("apply_metadata", r=2, k=0), step("alter_partition", l=0)]
    spec, states = run("kafka-3.9", steps, **PROBE)
    assert states[-1]["ap_resp"][0] == 3 and states[-1]["q_isr"] == [True, True, False]
    read = run("kafka-3.9", steps + [step("alter_partition_response", l=0)], **PROBE)[1][-1]
    assert read["alter_pending"][0] and not read["ap_sent"][0]           # pending until new metadata
    applied = run("kafka-3.9", steps + [step("alter_partition_response", l=0), step("apply_metadata", r=0, k=0)],
                  **PROBE)[1][-1]
    assert not applied["alter_pending"][0] and applied["isr"][0] == [True, True, False]


def test_a_request_is_committed_after_its_sender_crashed():
    steps = PROBE_STEPS[:9] + [step("crash", r=0), step("alter_partition", l=0)]
    spec, states = run("kafka-3.9", steps, replicas=3, min_isr=2, max_epochs=1, max_crashes=1)
    assert states[-1]["q_isr"] == [True, True, False] and states[-1]["ap_resp"][0] == 0
    assert not states[-1]["ap_sent"][0] and not states[-1]["up"][0]


# --- registrations and elections ---------------------------------------------------------------------------------
def test_a_crashed_broker_stays_registered_until_its_session_expires():
    """The controller learns of a crash only when the session expires (fence_broker): until then the broker stays
    in the ISR and may even be elected; it registers again only once fenced."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("crash", r=0)]
    spec, states = run("kafka-3.9", steps)
    s = states[-1]
    assert s["q_isr"] == [True, True] and s["q_leader"] == 0 and not s["fenced"][0]
    assert not enabled(spec, s, "restart", r=0)                          # DuplicateBrokerRegistration
    fenced = run("kafka-3.9", steps + [step("fence_broker", r=0, l=1)])[1][-1]
    assert fenced["q_isr"] == [False, True] and fenced["q_leader"] == 1 and fenced["q_epoch"] == 2
    assert not enabled(spec, s, "fence_broker", r=0, l=0)                # a fenced broker is no valid leader


def test_with_elr_the_fenced_replica_joins_the_elr_and_leaves_it_when_it_registers_again():
    """KIP-966 (4.0): handleBrokerFenced puts a replica leaving an ISR below min.insync.replicas into the ELR (the
    controller does not know how it stopped); registering again (handleBrokerUncleanShutdown) takes it out."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("shutdown", r=1), step("fence_broker", r=1, l=2)]
    spec, states = run("kafka-4.0", steps)
    assert states[-1]["q_isr"] == [True, False] and states[-1]["q_elr"] == [False, True]
    back = run("kafka-4.0", steps + [step("apply_metadata", r=0, k=0), step("restart", r=1)])[1][-1]
    assert back["q_elr"] == [False, False] and back["fenced"][1] and back["up"][1]


def test_unfencing_elects_the_last_isr_member_of_a_leaderless_partition():
    """kafka-3.9 (ELR off): the fenced leader stays the last ISR member, the partition has no leader, and the
    controller elects it when it registers and is unfenced (handleBrokerUnfenced)."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("lag_expires", l=0, f=1), step("maybe_shrink_isr", l=0), step("alter_partition", l=0),
             step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0), step("crash", r=0),
             step("fence_broker", r=0, l=2)]
    spec, states = run("kafka-3.9", steps)
    assert states[-1]["q_leader"] == 2 and states[-1]["q_isr"] == [True, False]
    after = run("kafka-3.9", steps + [step("apply_metadata", r=1, k=0), step("restart", r=0),
                                      step("apply_metadata", r=0, k=0), step("unfence_broker", r=0)])[1][-1]
    assert after["q_leader"] == 0 and after["q_epoch"] == 3 and not after["fenced"][0]


def test_only_kafka_19522_elects_a_fenced_last_known_leader():
    """4.0.0's canElectLastKnownLeader elects the last known leader while it is fenced (KAFKA-19522)."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("crash", r=1), step("fence_broker", r=1, l=2), step("apply_metadata", r=0, k=0),
             step("crash", r=0), step("fence_broker", r=0, l=2), step("restart", r=1), step("apply_metadata", r=1, k=0),
             step("restart", r=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0)]
    spec, states = run("kafka-19522", steps)
    s = states[-1]
    assert s["q_leader"] == 2 and s["q_last_known_leader"] == 0 and s["fenced"][0]
    assert s["q_isr"] == [False, False] and s["q_elr"] == [False, False]
    assert enabled(spec, s, "elect_last_known_leader", l=0)
    fixed, fixed_states = run("kafka-4.0-keep-pending", steps, **{b: spec.bounds[b] for b in
                                                                  ("max_crashes", "max_records", "log_size")})
    assert not enabled(fixed, fixed_states[-1], "elect_last_known_leader", l=0)
    elected = run("kafka-19522", steps + [step("elect_last_known_leader", l=0)])[1][-1]
    assert not holds(spec, elected, "leader-unfenced")


def test_kafka_3_5_bumps_the_leader_epoch_of_a_shrink_and_ignores_its_answer():
    """3.5 (before KAFKA-15021): the shrink's record has a new leader epoch; handleAlterPartitionUpdate ignores the
    answer (stale leader epoch) and the state stays pending until makeLeader runs for the new epoch."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("produce", l=0), step("lag_expires", l=0, f=1), step("maybe_shrink_isr", l=0),
             step("alter_partition", l=0), step("apply_metadata", r=1, k=0), step("alter_partition_response", l=0)]
    spec, states = run("kafka-3.5", steps)
    assert states[-3]["q_epoch"] == 2 and states[-3]["ap_resp"][0] == 2
    assert states[-1]["alter_pending"][0] and states[-1]["leader_epoch"][0] == 1
    assert run("kafka-3.9", steps)[1][-3]["q_epoch"] == 1                   # 3.9 keeps the leader epoch


# --- the fetcher and the lag -------------------------------------------------------------------------------------
def test_a_fetch_at_the_leo_of_the_previous_fetch_counts_as_caught_up_while_that_fetch_is_recent():
    """Replica.updateFetchStateOrThrow's second rule: lastCaughtUpTimeMs = lastFetchTimeMs when the fetch offset
    reaches lastFetchLeaderLogEndOffset; once replica.lag.time.max.ms passed since that fetch, it does not."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("produce", l=0), step("lag_expires", l=0, f=1), step("fetch", f=1, l=0), step("produce", l=0)]
    spec, states = run("kafka-3.9", steps, max_records=3, log_size=3)
    s = states[-1]
    assert not s["caught_up"][0][1] and s["fetch_recent"][0][1] and s["last_fetch_leo"][0][1] == 1
    again = run("kafka-3.9", steps + [step("fetch", f=1, l=0)], max_records=3, log_size=3)[1][-1]
    assert again["caught_up"][0][1] and again["remote_leo"][0][1] == 1 < again["leo"][0] == 2
    late = run("kafka-3.9", steps + [step("lag_expires", l=0, f=1), step("fetch", f=1, l=0)], max_records=3,
               log_size=3)[1][-1]
    assert not late["caught_up"][0][1]


def test_a_partial_answer_carries_fewer_records_and_the_hw_at_most_the_new_leo():
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("produce", l=0), step("produce", l=0), step("fetch", f=1, l=0), step("fetch", f=1, l=0),
             step("fetch", f=1, l=0)]
    spec, states = run("kafka-3.9", steps, max_records=3, log_size=3)
    assert states[-1]["hw"][0] == 2 and states[-1]["hw"][1] == 2
    more = run("kafka-3.9", steps + [step("produce", l=0), step("lag_expires", l=0, f=1)], max_records=3,
               log_size=3)
    s = more[1][-1]
    assert s["leo"][0] == 3 and s["leo"][1] == 2


class Kafka39FetcherFixed(Kafka39):
    """kafka-3.9 with KAFKA-18991's fix (3.9.1): the fetcher compares the request's leader epoch."""
    name = "kafka-3.9-fetcher-fixed"
    fetch_checks_request_epoch = True


# r1 fetches from r0 (the answer stays in flight); r0, the last ISR member, crashes and is fenced (no leader);
# it registers again and, unfenced, is elected once more; r1's listener publishes both records at once: the same
# leader in a new leader epoch, so its fetcher restarts for r0 at the same offset, and the old answer arrives
STALE_ANSWER = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
                step("produce", l=0), step("lag_expires", l=0, f=1), step("maybe_shrink_isr", l=0),
                step("alter_partition", l=0), step("apply_metadata", r=0, k=0), step("fetch", f=1, l=0),
                step("crash", r=0), step("fence_broker", r=0, l=2), step("restart", r=0),
                step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=1), step("unfence_broker", r=0),
                step("apply_metadata", r=1, k=0)]


@pytest.mark.parametrize("cls, applies", [(Kafka39, True), (Kafka39FetcherFixed, False)])
def test_an_answer_read_in_a_newer_leader_epoch_of_the_same_leader(cls, applies):
    """fetch_responses: 3.9.0's fetcher processes an answer at the same fetch offset whatever leader epoch its
    request carried (AbstractFetcherThread.processFetchRequest); with KAFKA-18991's fix it drops it."""
    spec = cls(metadata_lag=2, fetch_responses=1)
    sc = backends.scalar(spec)
    row = sc.initial_row()
    for name, params in STALE_ANSWER:
        row = sc.step(row, backends.action_named(spec, name, params))
        assert row is not None, (name, params)
    s = spec.layout.decode(row)
    assert s["resp_sent"][1][0] and s["resp_leader_epoch"][1][0] == 1 and s["leader_epoch"][1] == 3
    assert s["leader"][1] == 0 and s["leo"][1] == 0 == s["resp_offset"][1][0]
    after = spec.layout.decode(sc.step(row, backends.action_named(spec, "fetch_response", {"f": 1, "l": 0})))
    assert after["leo"][1] == (1 if applies else 0) and not after["resp_sent"][1][0]


# --- the presentation ----------------------------------------------------------------------------------------------
def test_show_tells_the_probe_in_kafka_terms_in_80_columns(tmp_path):
    path = os.path.join(SAVED, "kafka-3.9", "probe", "strong-isr.itf.json")
    r = isrcheck("show", path, "--compact", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    text = words(r.stdout)
    for phrase in ("makeLeader runs again at its own partition epoch", "dropping its pending AlterPartition",
                   "reads the answer to its AlterPartition (accepted)", "sends AlterPartition adding r2",
                   "joins the ISR although it lacks", "isr-expiration task finds r2 out of sync",
                   "fewer than r0 has"):
        assert phrase in text, phrase
    assert "ZooKeeper" not in text and "Every ISR member (in the metadata log)" in text


def test_a_clean_election_from_the_elr_is_not_called_unclean():
    """KIP-966: with no ISR member left, an ELR member is a clean choice (PartitionChangeBuilder.isValidNewLeader):
    the leader's fencing elects the follower it dropped below min.insync.replicas."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("produce", l=0), step("lag_expires", l=0, f=1), step("maybe_shrink_isr", l=0),
             step("alter_partition", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("crash", r=0), step("fence_broker", r=0, l=1)]
    spec, states = run("kafka-4.0", steps)
    prev, cur = states[-2], states[-1]
    assert prev["q_isr"] == [True, False] and prev["q_elr"] == [False, True]
    assert cur["q_leader"] == 1 and cur["q_isr"] == [False, True]
    text = spec.presentation.phrase(_view(spec, prev), _view(spec, cur), "fence_broker", {"r": 0, "l": 1})
    assert "r1 becomes leader from the ELR" in text and "clean election" in text and "unclean" not in text
    # the ZooKeeper-era family (kip-966) says the same of its own ELR election
    kip = SPECS["kip-966"]()
    zk_prev = {**kip.layout.decode(backends.scalar(kip).initial_row()), "q_isr": [False, False],
               "q_elr": [False, True], "q_leader": 2, "q_epoch": 1}
    zk_cur = {**zk_prev, "q_isr": [False, True], "q_elr": [False, False], "q_leader": 1, "q_epoch": 2}
    zk = kip.presentation.phrase(_view(kip, zk_prev), _view(kip, zk_cur), "elect_leader", {"l": 1})
    assert "eligible leader replicas" in zk and "unclean" not in zk


def _view(spec, state):
    from isrcheck.model.kafka_present import _S
    return _S(state, spec.presentation.R)


def test_kafka_4_0_says_why_it_does_not_check_strong_isr(tmp_path):
    r = isrcheck("list", "kafka-4.0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "strong-isr is not checked" in words(r.stdout) and "KIP-966" in r.stdout
    r = isrcheck("check", "--spec", "kafka-4.0", "--invariant", "strong-isr", cwd=tmp_path)
    assert r.returncode == 2 and "strong-isr" in r.stderr and "Traceback" not in r.stderr


# --- reassignment (model/kraft_reassignment.py) ---------------------------------------------------------------------
#: three brokers, replicas r0 and r1 (r2 holds none); r0 leads epoch 1 with record 1 on both replicas
MOVE_BOUNDS = dict(replicas=3, reassignments=1, max_records=1, log_size=1)
LED = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
       step("apply_metadata", r=2, k=0), step("produce", l=0), step("fetch", f=1, l=0)]


def applied(*brokers):
    return [step("apply_metadata", r=r, k=0) for r in brokers]


def test_a_reassignment_keeping_the_leader_completes_from_its_alter_partition_with_a_new_leader_epoch():
    """Move r1 to r2: the first record adds r2 in the same leader epoch; r2 creates the partition and fetches; the
    leader's AlterPartition adding r2 completes it (ISR and replicas {r0,r2}) and the shrinking replica list bumps
    the leader epoch, which the answer carries; r1 deletes its log once its image drops it."""
    start = LED + [step("alter_partition_reassignments", t=0b101, p=0, l=3)]
    spec, states = run("kafka-3.9", start, **MOVE_BOUNDS)
    s = states[-1]
    assert s["q_replicas"] == [True, True, True] and s["q_adding"] == [False, False, True]
    assert s["q_removing"] == [False, True, False] and s["q_epoch"] == 1 and s["q_leader"] == 0
    steps = start + applied(2, 0, 1) + [step("fetch", f=2, l=0)]
    spec, states = run("kafka-3.9", steps, **MOVE_BOUNDS)
    assert states[-4]["leader"][2] == 0 and states[-1]["pending_isr"][0] == [True, True, True]
    assert not enabled(spec, states[-1], "alter_partition_elects", l=0, n=2)      # the leader stays
    done = run("kafka-3.9", steps + [step("alter_partition", l=0)], **MOVE_BOUNDS)[1][-1]
    assert done["q_isr"] == [True, False, True] and done["q_replicas"] == [True, False, True]
    assert done["q_adding"] == done["q_removing"] == [False, False, False]
    assert done["q_leader"] == 0 and done["q_epoch"] == 2 and done["ap_resp"][0] == 2   # ACCEPTED_NEW_EPOCH
    gone = run("kafka-3.9", steps + [step("alter_partition", l=0)] + applied(1), **MOVE_BOUNDS)[1][-1]
    assert gone["leo"][1] == 0 and not gone["img_replica"][1] and gone["leader"][1] == 3
    assert not enabled(spec, gone, "fetch", f=1, l=0)


def test_kafka_3_5_completes_once_the_adding_replica_is_in_the_isr_and_3_9_waits_for_every_target():
    """KAFKA-15665 (fixed in 3.8): r1 is out of the ISR; moving r0 to r2 (target {r1,r2}) completes in 3.5 as soon as
    r2 joins, electing r2 (NEW_LEADER_ELECTED to r0, the ISR {r2} alone), while 3.9 waits for r1 too."""
    out = LED[:5] + [step("lag_expires", l=0, f=1), step("maybe_shrink_isr", l=0), step("alter_partition", l=0),
                     step("alter_partition_response", l=0)] + applied(0, 1, 2)
    steps = out + [step("alter_partition_reassignments", t=0b110, p=1, l=3)] + applied(2, 0, 1) + [
        step("fetch", f=2, l=0), step("fetch", f=2, l=0)]
    for name, completes in (("kafka-3.5", True), ("kafka-3.9", False)):
        spec, states = run(name, steps, **MOVE_BOUNDS, min_isr=1, unflushed_loss=0)
        s = states[-1]
        assert s["q_isr"] == [True, False, False] and s["pending_isr"][0] == [True, False, True], name
        assert enabled(spec, s, "alter_partition_elects", l=0, n=2) == completes, name
        assert enabled(spec, s, "alter_partition", l=0) != completes, name
    after = run("kafka-3.5", steps + [step("alter_partition_elects", l=0, n=2)], **MOVE_BOUNDS, min_isr=1,
                unflushed_loss=0)[1][-1]
    assert after["q_leader"] == 2 and after["q_isr"] == [False, False, True]
    assert after["q_replicas"] == [False, True, True] and after["ap_resp"][0] == 3      # NEW_LEADER_ELECTED: pending


def test_the_kraft_progress_properties_hold_by_their_fairness_and_fail_without_it():
    """fenced-eventually-unfenced and alter-partition-completes hold at small bounds; stated without fairness, the
    controller may leave a live broker fenced, or an AlterPartition unanswered, forever (a lasso each)."""
    from isrcheck.checker.exhaustive import liveness
    from isrcheck.model.kraft import KRaftReplication
    from isrcheck.model.spec import leads_to
    from isrcheck.specs.kafka_3_9 import Kafka39KeepPending

    class Unfair(Kafka39KeepPending):
        name = "kraft-unfair"

        @leads_to("unfenced-unfair", fairness=[])
        def unfenced_unfair(self, s):
            """fenced-eventually-unfenced without fairness."""
            return KRaftReplication.fenced_eventually_unfenced(self, s)

        @leads_to("answered-unfair", fairness=[])
        def answered_unfair(self, s):
            """alter-partition-completes without fairness."""
            return KRaftReplication.alter_partition_completes(self, s)

    spec = Unfair(log_size=1, max_records=1, max_epochs=2)
    got = {n: r.verdict for n, r in liveness.check(spec, ["fenced-eventually-unfenced", "alter-partition-completes",
                                                          "unfenced-unfair", "answered-unfair"]).items()}
    assert got == {"fenced-eventually-unfenced": "holds", "alter-partition-completes": "holds",
                   "unfenced-unfair": "violated", "answered-unfair": "violated"}


def test_min_insync_replicas_counts_at_most_the_replicas_of_the_assignment():
    """kafka-4.0 (min.insync.replicas=2) with the partition on r0 alone before a reassignment moves it to r1: the
    effective min ISR is 1 (Partition.effectiveMinIsr, getTopicEffectiveMinIsr), so r0 alone commits a record; once
    the reassignment adds r1 the leader's assignment has two replicas and an acks=all write needs both in the ISR."""
    steps = [step("elect_leader", l=0), step("apply_metadata", r=0, k=0), step("apply_metadata", r=1, k=0),
             step("produce", l=0)]
    spec, states = run("kafka-4.0", steps, reassignments=1)
    assert states[-1]["acked_at"][0] == 0 and states[-1]["hw"][0] == 1
    moved = steps + [step("alter_partition_reassignments", t=0b10, p=1, l=2), step("apply_metadata", r=0, k=0),
                     step("apply_metadata", r=1, k=0)]
    spec, states = run("kafka-4.0", moved, reassignments=1)
    assert states[-1]["assigned"][0] == [True, True] and states[-1]["isr"][0] == [True, False]
    assert not enabled(spec, states[-1], "produce", l=0)                 # NOT_ENOUGH_REPLICAS: ISR 1 < 2
