"""Kafka 2.6.1 with a reassignment's completion that keeps the leader epoch when the leader stays."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_2_6_1 import SHRINK_REPLICAS, Kafka261

#: the liveness properties this version is not triaged for (its point is an invariant)
PROPERTIES = ("eventually-leader", "hw-advances", "isr-regrows", "truncation-terminates", "write-resolves",
              "acked-fully-replicated", "metadata-converges", "reassignment-completes")


class NoReassignmentBump(Kafka261):
    name = "no-reassignment-bump"
    summary = ("Kafka 2.6.1 whose controller completes a reassignment without a new leader epoch when the leader "
               "stays (B3 of onPartitionReassignment): the leader never learns the smaller replica set, keeps "
               "serving the removed replica, adds it back to the ISR, and the replica then deletes its log on "
               "StopReplica while still an ISR member.")
    missing_fence = ("The completion's LeaderAndIsr keeps the leader epoch, so the leader ignores it; Kafka bumps the "
                     "epoch (updateLeaderEpochAndSendRequest: \"This will prevent the leader from adding any replica "
                     "in TRS - ORS back in the isr\"), and KRaft does as well (KAFKA-12803's review).")
    references = ("KAFKA-12803 (why a reassignment's completion bumps the leader epoch)",)
    reassignment_bumps_epoch = False
    defaults = {**Kafka261.defaults, **SHRINK_REPLICAS}
    expected = {**Kafka261.expected, "strong-isr": "violated", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "strong-isr": "the reassignment drops r1 (out of the ISR at the time) and completes in the same leader epoch "
                      "as r0 keeps leading, so r0 never learns the new replica set; r1 still fetches, r0 adds it back "
                      "to the ISR, and r1 deletes its log on StopReplica while in the ISR (KAFKA-12803's review: the "
                      "epoch bump prevents this; kafka-2.6.1 holds at these bounds)",
        "strong-live-isr": "the same: r1 is live"}
    expected_liveness = dict.fromkeys(PROPERTIES)
