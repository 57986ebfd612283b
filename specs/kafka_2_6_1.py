"""Kafka 2.6.1: 2.1 (KIP-320) with KIP-380's broker epochs (2.2), the HW kept within the log (2.4) and KAFKA-10706's fix."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import KAFKA_9198_BOUNDS, Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS

#: one reassignment shrinks the replica set from both brokers to one, the leader staying if it is the one kept, at
#: bounds where that is all that happens (no crash, one record)
SHRINK_REPLICAS = {"reassignments": 1, "reassign_add": 0, "max_crashes": 0, "log_size": 1, "max_records": 1,
                   "max_epochs": 2}


class Kafka261(Kip320):
    name = "kafka-2.6.1"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.6.1: KIP-320's fencing, the controller notices every bounce (KIP-380, 2.2), truncation "
               "brings the HW down to the new LEO (2.4), and Log.truncateTo at the LEO still drops the "
               "leader-epoch cache entry makeLeader wrote there (KAFKA-10706), so a follower's truncation ends.")
    references = ("KAFKA-10706 (liveness: a follower's truncation never ends after elections without writes; "
                  "fixed here)", "KAFKA-9198 (fixed here: StopReplica answers the produce requests in purgatory)")
    restart_noticed = True                  # KIP-380 (2.2): KafkaController.onBrokerStartup with broker epochs
    truncation_clamps_hw = True             # Log.updateLogEndOffset (2.4+)
    truncation_cleans_epoch_cache = True    # Log.truncateTo (2.6.1, apache/kafka#9633)
    stop_replica_completes_produce = True   # ReplicaManager.stopReplicas (2.4+, KAFKA-9198)
    expected = {k: v for k, v in Kip320.expected.items() if not k.startswith("lemma-")}
    expected_why = {"single-acting-leader": KafkaReplication.expected_why["single-acting-leader"]}
    expected_liveness = {"eventually-leader": "holds", "truncation-terminates": "holds",
                         "hw-advances": "holds", "isr-regrows": "holds"}
    expected_liveness_why = {
        "hw-advances": "KAFKA-10706 fixed: the no-op truncation at the LEO drops the cache entry of the epoch the "
                       "follower led without writing, so its next OffsetsForLeaderEpoch asks for the epoch of its "
                       "last record and truncation ends (kip-320 loops at these bounds). Fairness: weak fetch, "
                       "apply_leader_and_isr, truncate_by_epoch, alter_isr",
        "isr-regrows": "KAFKA-10706 fixed, as for hw-advances: the follower fetches again and rejoins the ISR "
                       "(kip-320 loops at these bounds)"}
    configurations = {
        "kafka-9198": Configuration(
            bounds=KAFKA_9198_BOUNDS,
            expected={name: "holds" for name in ("no-committed-loss", "no-committed-loss-anywhere", "log-matching",
                                                 "hw-log-matching", "consistent-reads", "strong-isr")},
            liveness={name: "holds" for name in ("eventually-leader", "hw-advances", "isr-regrows",
                                                 "truncation-terminates", "write-resolves", "acked-fully-replicated",
                                                 "metadata-converges", "reassignment-completes")},
            why={"write-resolves": "KAFKA-9198 fixed (2.4): StopReplica completes the produce requests in the removed "
                                   "leader's purgatory (ReplicaManager.stopReplicas -> "
                                   "completeDelayedFetchOrProduceRequests), so they are answered NOT_LEADER_OR_FOLLOWER "
                                   "(kip-320 leaves them to time out at these bounds)",
                 "reassignment-completes": "the new replica joins the ISR, the controller completes the reassignment "
                                           "from the ISR znode's watch and moves the leader to it, and the removed "
                                           "replica is out of the ISR before it deletes its log"}),
        "shrink-replicas": Configuration(
            bounds=SHRINK_REPLICAS, expected={"strong-isr": "holds", "strong-live-isr": "holds"},
            why={"strong-isr": "the completion's LeaderAndIsr bumps the leader epoch even when the leader stays, so the "
                               "leader learns the smaller replica set and never adds the removed replica back to the "
                               "ISR (no-reassignment-bump does at these bounds)"}),
    }
