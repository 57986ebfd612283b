"""Kafka 3.5 in KRaft mode: before KAFKA-15021 and KAFKA-15583 (the HW advances below min.insync.replicas)."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import Kafka39


class Kafka35(Kafka39):
    name = "kafka-3.5"
    summary = ("Kafka 3.5 (KRaft, 3.5.2): kafka-3.9 before KAFKA-15021 (3.6: every ISR shrink bumps the leader epoch, "
               "PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded; the HW waits for every caught-up replica, "
               "eligible or not), KAFKA-15583 (3.7: the HW advances while the ISR is below min.insync.replicas) and "
               "KAFKA-15665 (3.8: before, a reassignment completes once its adding replicas are in the ISR); "
               "here with min.insync.replicas=2 and hard crashes that lose the unflushed log tail: KRaft's last "
               "replica standing.")
    references = ("KIP-966 (the last replica standing problem)", "KAFKA-15021", "KAFKA-15583", "KIP-903",
                  "KAFKA-15665 (3.1-3.7: a reassignment completes once its adding replicas are in the ISR)")
    missing_fence = ("A replica that lost data in an unclean shutdown stays the last ISR member through its fencing and "
                     "registration and is elected again; KIP-966 (4.0) empties the ISR, keeps replicas that left it "
                     "below min.insync.replicas as eligible leader replicas, and takes every replica that registers "
                     "again out of the ISR and the ELR.")
    shrink_keeps_leader_epoch = False
    hw_waits_for_eligible_only = False
    hw_stops_below_min_isr = False
    completion_waits_for_every_target = False     # KAFKA-15665 (fixed in 3.8)
    #: the last replica standing needs four leader epochs here: the ISR shrink to the leader bumps the epoch (3.5),
    #: the leader's fencing leaves the partition leaderless, and its unfencing elects it again
    defaults = {**Kafka39.defaults, "min_isr": 2, "unflushed_loss": 1, "max_epochs": 4}
    configurations = {}
    not_modelled = {
        "KAFKA-15665": "modelled (completion_waits_for_every_target), and it breaks no invariant: the completion takes "
                       "only removing replicas out of the ISR, whose other members hold every committed record, so "
                       "completing before a lagging target replica is back costs redundancy, not records (3.9 with "
                       "this rule, three brokers, one reassignment: every invariant holds); "
                       "tests/test_kraft.py shows the early completion"}
    expected = {**Kafka39.expected, **{name: "holds" for name in (
        "log-matching", "hw-log-matching", "single-leader-per-epoch", "leader-in-isr", "strong-live-isr",
        "maximal-isr-covers-isr", "leader-unfenced")}, **{name: "violated" for name in (
        "no-committed-loss", "no-committed-loss-anywhere", "consistent-reads", "hw-monotonic", "strong-isr",
        "candidates-complete")}}
    #: liveness not part of the gate (11 million states: the properties would double the search); measured at the
    #: defaults, eventually-leader, hw-advances, isr-regrows and truncation-terminates hold (hw-advances: with
    #: min.insync.replicas=2 a follower that stops leaves fewer acceptable brokers than min.insync.replicas, which
    #: ends the obligation); the progress properties are not measured here
    expected_liveness = dict.fromkeys(Kafka39.expected_liveness)
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KIP-966's last replica standing: a record committed by both replicas, the ISR shrinks "
                             "to the leader (a new leader epoch in 3.5), whose hard crash loses its unflushed tail; "
                             "fenced, it stays the last ISR member, registers again, is unfenced and elected",
        "hw-monotonic": "the same, and before KAFKA-15583 the leader alone in the ISR also exposes records below "
                        "min.insync.replicas: the re-elected leader's log ends below the HW consumers saw",
        "no-committed-loss-anywhere": "the same: once the leader lost the record, the ISR is that leader alone",
        "consistent-reads": "the same: the re-elected leader writes another record at an offset consumers read",
        "strong-isr": "a follower's hard crash loses committed records it keeps in the ISR until its session expires",
        "candidates-complete": "the last ISR member, registered again after losing the record, can be elected",
        "strong-live-isr": "KIP-903: a replica that registered again is not added to the ISR from a fetch of its "
                           "previous incarnation",
        "maximal-isr-covers-isr": "every ISR shrink bumps the leader epoch (before KAFKA-15021), so the leader learns "
                                  "it from the "
                                  "metadata log before it can propose again; an expansion re-applied drops only a "
                                  "pending shrink at two replicas",
    }
