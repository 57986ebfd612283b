"""Kafka 2.1 (KIP-320): fetches fenced by the current leader epoch."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_2_0_1 import Kafka201
from isrcheck.specs.kip_279 import KAFKA_7128_BOUNDS
from isrcheck.specs.kip_320_lemmas import LEMMAS, LEMMAS_WHY, Kip320Lemmas
from isrcheck.specs.progress import FAIRNESS, HOLDS

#: one reassignment moves the partition off its only replica, the leader (two brokers, replication factor 1)
KAFKA_9198_BOUNDS = {"reassignments": 1}


class Kip320(Kip320Lemmas, Kafka201):
    name = "kip-320"
    summary = ("Kafka 2.1: Fetch and OffsetsForLeaderEpoch carry the follower's current leader epoch and "
               "the leader rejects any other; a follower rejoins the ISR only once it reached the start "
               "of the leader's epoch.")
    references = ("KIP-320", "KAFKA-6880 (zombie replicas must be fenced)", "KAFKA-7128 (fixed since 2.0.1)",
                  "KAFKA-9198 (fixed in 2.4: StopReplica leaves produce requests to time out)",
                  "KAFKA-7415 (fixed since 2.0.1: a new leader answered UNDEFINED for epochs before its first write)")
    expected = {**Kafka201.expected, "no-committed-loss": "holds", "consistent-reads": "holds",
                "hw-monotonic": "holds", "strong-isr": "holds", "no-committed-loss-anywhere": "holds", "hw-log-matching": "holds",
                "strong-live-isr": "holds", **{name: "holds" for name in LEMMAS}}
    expected_why = {**KafkaReplication.expected_why, **LEMMAS_WHY,
        "no-committed-loss": "KAFKA-6880 and KAFKA-7415 fixed: fetches and OffsetsForLeaderEpoch are fenced by the "
                             "leader epoch, and a new leader caches its epoch on election (kip-279 loses a "
                             "committed record at these bounds)"}
    configurations = {
        "kafka-1382": Configuration(
            bounds={"max_epochs": 2}, expected={"no-committed-loss": "holds", "leader-in-isr": "holds"},
            why={"no-committed-loss": "KAFKA-1382 fixed: a deposed leader's ISR write is conditional on its zkVersion "
                                      "and fails (no-isr-fencing loses a record at these bounds)"}),
        "kafka-1188": Configuration(
            bounds={"controller_failover": 1, "max_epochs": 2},
            expected={"single-leader-per-epoch": "holds", "log-matching": "holds", "no-committed-loss": "holds"},
            why={"single-leader-per-epoch": "KAFKA-1188 fixed: brokers reject a LeaderAndIsr from an older controller "
                                            "epoch (zombie-controller has two leaders of one epoch here)"}),
        "kafka-7128": Configuration(
            bounds=KAFKA_7128_BOUNDS, expected={"no-committed-loss": "holds"},
            why={"no-committed-loss": "KAFKA-7128 fixed: a follower joins the ISR only once it reached the start "
                                      "of the leader's epoch (kip-279 and kafka-7128 lose a record here)"}),
        "kafka-6880": Configuration(
            bounds={"max_records": 3}, expected={"hw-log-matching": "holds"},
            why={"hw-log-matching": "KAFKA-6880 fixed: fetches carry the follower's leader epoch and the leader "
                                    "rejects any other (kip-279 diverges below the HW at these bounds)"}),
        "kafka-9198": Configuration(
            bounds=KAFKA_9198_BOUNDS, expected={"no-committed-loss": "holds", "strong-isr": "holds"},
            liveness={"write-resolves": "violated", "reassignment-completes": "holds"},
            why={"write-resolves": "KAFKA-9198 (0.8-2.3): the leader appends an acks=all record; the reassignment "
                                   "completes, the controller elects the new replica and sends LeaderAndIsr to the "
                                   "target replicas only; the old leader hears only StopReplica, which deletes its log "
                                   "and leaves the request in purgatory until request.timeout.ms "
                                   "(ReplicaManager.stopReplicas, 2.1; kafka-2.6.1 holds at these bounds). " + FAIRNESS}),
        "kafka-1120": Configuration(
            bounds={"unflushed_loss": 1, "max_crashes": 2, "max_epochs": 2}, expected={"log-matching": "violated"},
            why={"log-matching": "KAFKA-1120 (2.1 has no KIP-380 broker epoch): the leader loses its unflushed "
                                 "record in a fast bounce the controller misses, comes back as leader of the same "
                                 "epoch and writes another record at the offset its follower holds (kip-497, 2.7, "
                                 "holds at these bounds)"}),
    }
    # liveness: 2.1 loops as 2.0.1 does (KAFKA-10706), a sibling rather than a parent, so stated here
    expected_liveness = {**Kafka201.expected_liveness, **HOLDS}
    expected_liveness_why = {**Kafka201.expected_liveness_why,
        "truncation-terminates": "holds at these bounds only: weak elect_leader forces an election away from the "
                                 "looping follower's leader while the follower is in the ISR, and the loop that "
                                 "remains once the leader dropped it from the ISR needs the last epoch, where the "
                                 "obligation ends; at max_epochs=5 it is violated (KAFKA-10706; kafka-2.6.1 holds)"}

    def follower_changes(self, s, old_leader, old_epoch, new_leader, epoch):
        """Partition.makeFollower (2.1.0): the fetcher restarts unless both leader and epoch are unchanged.

        (2.0.1 skipped it while the epoch moved by at most one, KAFKA-7164.) The model applies only newer
        epochs, so every LeaderAndIsr that makes a follower truncates again.
        """
        return (old_leader != new_leader) | (epoch != old_epoch)

    def fetch_accepted(self, s, f, l):
        """KIP-320: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH unless both are on the same leader epoch."""
        return s.leader_epoch[f] == s.leader_epoch[l]
