"""Kafka 3.9 in KRaft mode (3.9.0), and the same with its equal-partition-epoch makeLeader fixed."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.model.kraft import KRaftReplication

#: the safety invariants every KRaft-era version without a known bug keeps
SAFETY = ("no-committed-loss", "no-committed-loss-anywhere", "log-matching", "hw-log-matching", "consistent-reads",
          "hw-monotonic", "single-leader-per-epoch", "leader-in-isr", "strong-isr", "strong-live-isr",
          "candidates-complete", "maximal-isr-covers-isr", "leader-unfenced")

#: what Partition.makeLeader's re-run on an equal partition epoch breaks (docs/findings/makeleader-equal-epoch.md)
REAPPLY = ("no-committed-loss", "no-committed-loss-anywhere", "hw-log-matching", "consistent-reads", "hw-monotonic",
           "strong-isr", "strong-live-isr", "candidates-complete", "maximal-isr-covers-isr")

#: the finding, in one sentence each invariant's reason starts from
REAPPLY_WHY = ("Partition.makeLeader re-applies the leader's own accepted AlterPartition from the metadata log at "
               "an equal partition epoch and drops the expansion it has sent since (updateAssignmentAndIsr), which "
               "the controller then commits (docs/findings/makeleader-equal-epoch.md; kafka-3.9-keep-pending holds "
               "at these bounds)")

#: the fairness the KRaft family's progress properties assume (model/kraft.py), as their reasons state it
PROGRESS_FAIRNESS = ("Fairness: weak fetch, apply_metadata, truncate_on_fetch_response, alter_partition, "
                     "alter_partition_elects, unfence_broker; strong alter_partition_response, fetch_response (each "
                     "instance)")

#: one reassignment moves the partition from its only replica to the other broker, the leader with it (two brokers)
MOVE = {"reassignments": 1}
#: three brokers, replicas r0 and r1: one reassignment moves one of them to r2, the leader staying or not (one record,
#: no crash, the two leader epochs an election and the completion take, to stay small)
MOVE_ONE_OF_TWO = {"replicas": 3, "reassignments": 1, "log_size": 1, "max_records": 1, "max_crashes": 0,
                   "max_epochs": 2}

#: what a KRaft reassignment is expected to keep: every safety invariant, and its progress
REASSIGNMENT_LIVENESS = ("eventually-leader", "isr-regrows", "truncation-terminates", "acked-fully-replicated",
                         "metadata-converges", "reassignment-completes", "fenced-eventually-unfenced",
                         "alter-partition-completes")
REASSIGNMENT_WHY = {
    "reassignment-completes": "the added replica applies the record naming it, fetches and is proposed for the ISR; "
                              "the AlterPartition holding the target completes the reassignment "
                              "(PartitionChangeBuilder.completeReassignmentIfNeeded), electing a target replica when "
                              "the leader leaves, with a new leader epoch either way; the removed replica deletes its "
                              "log when its image drops it. " + PROGRESS_FAIRNESS,
    "strong-isr": "the completion narrows the ISR to the target and bumps the leader epoch "
                  "(triggerLeaderEpochBumpForReplicaReassignmentIfNeeded): the leader ignores the answer and learns "
                  "the smaller replica set from the record, so no request of the current partition epoch proposes a "
                  "removed replica"}


def reassignment(bounds, dropped=()):
    """The configuration of a version whose reassignment keeps every safety invariant (but those it ``dropped``) and
    makes progress."""
    return Configuration(bounds=bounds, expected={name: "holds" for name in SAFETY if name not in dropped},
                         liveness={name: "holds" for name in REASSIGNMENT_LIVENESS},
                         why={k: v for k, v in REASSIGNMENT_WHY.items() if k not in dropped})

#: the reviewer's probe: 3 replicas, min.insync.replicas=2, one leader epoch, no crash
PROBE = {"replicas": 3, "min_isr": 2, "max_epochs": 1, "max_crashes": 0}

#: the behaviours the defaults leave out, each in a configuration of its own (two leader epochs, to stay small)
LIFTED = {"metadata-lag-2": {"metadata_lag": 2}, "eligibility-lag": {"eligibility_lag": 1},
          "fetch-responses": {"fetch_responses": 1}}


def lifted(loss_why=None):
    """A configuration per behaviour the defaults leave out: no-committed-loss violated there for ``loss_why`` (the
    version's reason), else held, and log-matching held either way."""
    out = {}
    for name, bounds in LIFTED.items():
        if loss_why:
            expected, why = {"no-committed-loss": "violated", "log-matching": "holds"}, {"no-committed-loss": loss_why}
        else:
            expected = {"no-committed-loss": "holds", "log-matching": "holds", "maximal-isr-covers-isr": "holds"}
            why = {"no-committed-loss": f"{name}: the fixed makeLeader holds with this behaviour too"}
        out[name] = Configuration(bounds={**bounds, "max_epochs": 2}, expected=expected, why=why)
    return out


class Kafka39(KRaftReplication):
    name = "kafka-3.9"
    summary = ("Kafka 3.9.0 (KRaft): brokers apply the partition's records from the metadata log when their "
               "listener reaches them, and Partition.makeLeader runs again on an equal partition epoch; followers "
               "fetch with their last fetched epoch and truncate on a DivergingEpoch answer; the leader proposes "
               "ISR changes with AlterPartition (partition epoch compared, broker epochs checked, KIP-903; every "
               "out-of-sync follower dropped at once), and the controller fences a broker whose session expired; the "
               "HW waits for the maximal ISR and caught-up eligible replicas and stops below min.insync.replicas; "
               "ELR off. Defaults: a broker's image one record behind at most, the leader's view of registrations "
               "the controller's, fetch answers read at once (configurations metadata-lag-2, eligibility-lag and "
               "fetch-responses lift each).")
    references = ("KIP-320", "KAFKA-13790 (makeLeader on an equal partition epoch)", "KAFKA-18991 (fixed in 3.9.1)",
                  "KIP-966 (ELR, off in 3.9: the last replica standing)")
    not_modelled = {
        "KAFKA-18991": "the fetcher's missing leader-epoch check is modelled (fetch_responses=1; "
                       "fetch_checks_request_epoch is the fix) and shows on a real state (tests/test_kraft.py), but "
                       "no bound within an exhaustive search's reach turns it into a violation: in 3.9 the follower "
                       "must publish a new leader epoch of the same leader while its fetch is in flight (a batched "
                       "metadata delta over another leader, or a leaderless gap), and the leader's log must have "
                       "changed below the diverging offset meanwhile (configuration fetch-responses: the same verdicts "
                       "as the defaults)"}
    expected = {**KafkaReplication.expected, **{name: "holds" for name in SAFETY},
                **{name: "violated" for name in REAPPLY}}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": f"{REAPPLY_WHY}: the leader's HW passes a record the new ISR member lacks, and a "
                             "preferred-leader election (or the leader's fencing) elects that member",
        "no-committed-loss-anywhere": "the same: after the election no electable replica holds the record",
        "hw-log-matching": "the same: the new leader writes another record below the HW the old leader exposed",
        "consistent-reads": "the same: consumers read the lost record's offset twice with different records",
        "hw-monotonic": "the same: the new leader's log ends below the HW consumers saw",
        "strong-isr": f"{REAPPLY_WHY}: the controller's ISR holds a member without a record below the HW",
        "strong-live-isr": "the same: that member is live",
        "candidates-complete": "the same: that member, electable, lacks an acknowledged record",
        "maximal-isr-covers-isr": f"{REAPPLY_WHY}: right after the re-run, the controller's ISR has a member the "
                                  "leader's maximal ISR lacks (KAFKA-13790 made makeLeader accept an equal "
                                  "partition epoch)",
        "log-matching": "KIP-320's epoch fence and truncate-on-fetch: no two replicas hold the same epoch at an "
                        "offset with different logs below it",
        "leader-unfenced": "PartitionChangeBuilder elects only unfenced brokers, and handleBrokerFenced elects another "
                           "leader in the record that fences the leader",
    }
    configurations = {
        "probe": Configuration(
            bounds=PROBE, expected={"strong-isr": "violated", "maximal-isr-covers-isr": "violated",
                                    "candidates-complete": "violated", "no-committed-loss": "holds"},
            why={"strong-isr": f"{REAPPLY_WHY}; within one leader epoch and without a crash: the new member lacks "
                               "a record below the HW",
                 "maximal-isr-covers-isr": REAPPLY_WHY,
                 "candidates-complete": "the same: that member lacks an acknowledged record",
                 "no-committed-loss": "one leader epoch: no election follows"}),
        "last-replica-standing": Configuration(
            bounds={"min_isr": 2, "unflushed_loss": 1}, expected={"no-committed-loss": "violated"},
            why={"no-committed-loss": "KIP-966's last replica standing, ELR off: a record committed by both replicas, "
                                      "the ISR shrinks to the leader, whose hard crash loses its unflushed tail; "
                                      "fenced, it stays the last ISR member and is elected again once it registers "
                                      "and is unfenced (kafka-4.0, ELR on, holds at these bounds)"}),
        **lifted(REAPPLY_WHY),
    }
    expected_liveness = {"eventually-leader": "holds", "hw-advances": "violated", "isr-regrows": "holds",
                         "truncation-terminates": "holds", "write-resolves": "violated",
                         "acked-fully-replicated": "violated", "metadata-converges": "holds",
                         "reassignment-completes": "holds", "fenced-eventually-unfenced": "holds",
                         "alter-partition-completes": "holds"}
    expected_liveness_why = {
        "fenced-eventually-unfenced": "BrokerLifecycleManager's heartbeat loop asks to be unfenced and "
                                      "BrokerHeartbeatManager unfences a live broker that asks. Fairness: weak "
                                      "unfence_broker, apply_metadata",
        "alter-partition-completes": "the controller handles every AlterPartition and AlterPartitionManager resends "
                                     "one whose answer is lost until one arrives. Fairness: weak alter_partition, "
                                     "alter_partition_elects, apply_metadata; strong alter_partition_response",
        "write-resolves": "the HW that nothing recomputes (hw-advances): the acks=all request of the record above it "
                          "waits for its timeout (an idempotent producer's retry would recompute it). "
                          f"{PROGRESS_FAIRNESS}",
        "acked-fully-replicated": f"{REAPPLY_WHY}: the acknowledged record is on no live ISR member after the "
                                  f"election, and none can fetch it any more. {PROGRESS_FAIRNESS}",
        "metadata-converges": "a live broker's metadata listener applies every record that reaches it. Fairness: weak "
                              "apply_metadata",
        "hw-advances": "Kafka 3.9 recomputes the HW only where Partition.maybeIncrementLeaderHW is called: makeLeader, "
                       "appendRecordsToLeader, updateFollowerFetchState when the follower's LEO moved, and "
                       "handleAlterPartitionUpdate. A follower caught up but outside the ISR holds the HW back "
                       "(shouldWaitForReplicaToJoinIsr, KAFKA-15021) and then crashes: its lag expiring and its "
                       "fencing change what the HW waits for but call none of the four, so the HW stays below a "
                       "record until the next produce (producers need no fairness; an idempotent producer's retry "
                       "would recompute it). Fairness: weak fetch, apply_metadata, truncate_on_fetch_response, "
                       "alter_partition, unfence_broker; strong alter_partition_response"}


class Kafka39KeepPending(Kafka39):
    name = "kafka-3.9-keep-pending"
    summary = ("kafka-3.9 with the smallest fix of its equal-partition-epoch makeLeader: a partition record of the "
               "partition epoch the leader already has (its own accepted AlterPartition, learnt first from the "
               "response) leaves the partition state alone, so an AlterPartition sent since stays pending and its "
               "proposed member stays in the maximal ISR.")
    references = ("KIP-320", "KIP-497", "KIP-841", "KIP-903", "KAFKA-13141 (fixed here)", "KAFKA-14704 (fixed here)",
                  "KAFKA-15021", "KAFKA-15583")
    make_leader_keeps_pending = True
    expected_liveness = {"acked-fully-replicated": "holds"}
    expected_liveness_why = {
        "acked-fully-replicated": "makeLeader keeps the pending AlterPartition on an equal partition epoch: no "
                                  "acknowledged record is lost at these bounds (kafka-3.9 loses one)"}
    expected = {**KafkaReplication.expected, **{name: "holds" for name in SAFETY}}
    expected_why = {**KafkaReplication.expected_why,
        **{name: "makeLeader keeps the pending AlterPartition on an equal partition epoch (kafka-3.9 breaks it at "
                 "these bounds)" for name in REAPPLY},
        "no-committed-loss": "makeLeader keeps the pending AlterPartition on an equal partition epoch (kafka-3.9 "
                             "breaks it at these bounds); KAFKA-13141 fixed: a fetch answered with DivergingEpoch does "
                             "not update the follower's fetch state on the leader (kafka-13141 loses a committed record "
                             "at these bounds); KIP-320's epoch fence, KIP-497's maximal ISR, KAFKA-15021's wait for "
                             "caught-up replicas and KAFKA-15583's min-ISR guard in place",
        "hw-log-matching": "KAFKA-14704 fixed: a follower truncates on DivergingEpoch before it applies any HW "
                           "(kafka-14704 holds a HW over a diverging record at these bounds)",
        "strong-isr": "KIP-903: an AlterPartition built from a replica's previous incarnation is rejected for its "
                      "stale broker epoch, and KIP-841: one adding a broker in controlled shutdown too (and no crash "
                      "loses a record at these bounds: unflushed_loss=0); makeLeader keeps the pending change"}
    configurations = {
        "probe": Configuration(
            bounds=PROBE, expected={"strong-isr": "holds", "maximal-isr-covers-isr": "holds",
                                    "candidates-complete": "holds"},
            why={"strong-isr": "the fix holds where kafka-3.9 breaks strong-isr",
                 "maximal-isr-covers-isr": "the fix holds where kafka-3.9 breaks it"}),
        "last-replica-standing": Configuration(
            bounds={"min_isr": 2, "unflushed_loss": 1},
            expected={"no-committed-loss": "violated", "strong-live-isr": "holds"},
            why={"no-committed-loss": "KIP-966's last replica standing, ELR off, as for kafka-3.9",
                 "strong-live-isr": "KIP-903 keeps a replica that registered again out of the ISR until it catches up "
                                    "(kafka-14617 breaks it at these bounds)"}),
        **lifted(),
        "reassignment": reassignment(MOVE),
        "reassignment-keeps-leader": reassignment(MOVE_ONE_OF_TWO),
    }
