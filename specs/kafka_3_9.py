"""Kafka 3.9 in KRaft mode: truncate-on-fetch, AlterPartition with broker epochs, the 3.x high watermark."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.model.kraft import KRaftReplication

#: the safety invariants every KRaft-era version without a known bug keeps
SAFETY = ("no-committed-loss", "no-committed-loss-anywhere", "log-matching", "hw-log-matching", "consistent-reads",
          "hw-monotonic", "single-leader-per-epoch", "leader-in-isr", "strong-isr", "strong-live-isr")


class Kafka39(KRaftReplication):
    name = "kafka-3.9"
    summary = ("Kafka 3.9 (KRaft): followers fetch with their last fetched epoch and truncate on a DivergingEpoch "
               "answer; the leader proposes ISR changes with AlterPartition (compare-and-set on the partition "
               "epoch, broker epochs checked, KIP-903); the HW waits for the maximal ISR and caught-up eligible "
               "replicas and stops below min.insync.replicas; ELR off.")
    references = ("KIP-320", "KIP-497", "KIP-841", "KIP-903", "KAFKA-13141 (fixed here)", "KAFKA-14704 (fixed here)",
                  "KAFKA-15021", "KAFKA-15583", "KIP-966 (ELR, off in 3.9: the last replica standing)")
    #: reassignment is modelled for the ZooKeeper-era controller only (model/reassignment.py)
    limits = {**KRaftReplication.limits, "reassignments": (0, 0)}
    expected = {**KafkaReplication.expected, **{name: "holds" for name in SAFETY}}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-13141 fixed: a fetch answered with DivergingEpoch does not update the follower's "
                             "fetch state on the leader (kafka-13141 loses a committed record at these bounds); "
                             "KIP-320's epoch fence, KIP-497's maximal ISR, KAFKA-15021's wait for caught-up "
                             "replicas and KAFKA-15583's min-ISR guard in place",
        "hw-log-matching": "KAFKA-14704 fixed: a follower truncates on DivergingEpoch before it applies any HW "
                           "(kafka-14704 holds a HW over a diverging record at these bounds)",
        "strong-isr": "KIP-903: an AlterPartition built from a replica's previous incarnation is rejected for its "
                      "stale broker epoch, and KIP-841: one adding a broker in controlled shutdown too (and no "
                      "crash loses a record at these bounds: unflushed_loss=0)",
    }
    configurations = {
        "last-replica-standing": Configuration(
            bounds={"min_isr": 2, "unflushed_loss": 1}, expected={"no-committed-loss": "violated"},
            why={"no-committed-loss": "KIP-966's last replica standing, ELR off: a record committed by both replicas, "
                                      "the ISR shrinks to the leader, whose hard crash loses its unflushed tail; it "
                                      "is re-elected as the last ISR member (kafka-4.0, ELR on, holds at these "
                                      "bounds)"}),
    }
    expected_liveness = {"eventually-leader": "holds", "hw-advances": "violated", "isr-regrows": "holds",
                         "truncation-terminates": "holds", "write-resolves": "violated", "acked-fully-replicated": "holds",
                         "metadata-converges": "holds", "reassignment-completes": "holds"}
    expected_liveness_why = {
        "hw-advances": "Kafka 3.9 recomputes the HW only where Partition.maybeIncrementLeaderHW is called: makeLeader, "
                       "appendRecordsToLeader, updateFollowerFetchState when the follower's LEO moved, and "
                       "handleAlterPartitionUpdate. The leader proposes dropping a lagging follower; the follower "
                       "fetches at the leader's LEO (caught up again, so the HW waits for it: "
                       "shouldWaitForReplicaToJoinIsr, KAFKA-15021); a record is appended; the AlterPartition "
                       "commits the ISR {leader} and recomputes the HW, still waiting for the caught-up follower; the "
                       "follower crashes. Its lag expiring and its fencing change what the HW waits for but call none "
                       "of the four, so the HW stays below the record until the next produce (producers need no "
                       "fairness; an idempotent producer's retry of the record would recompute it). Fairness: weak "
                       "fetch, apply_leader_and_isr, truncate_on_fetch_response, alter_partition, "
                       "apply_partition_change",
        "write-resolves": "the same HW that nothing recomputes: the acks=all request of the record above it waits for "
                          "its timeout (an idempotent producer's retry would recompute it). Fairness: weak fetch, "
                          "apply_leader_and_isr, truncate_on_fetch_response, alter_partition, apply_partition_change, "
                          "controller_shrink_isr"}
