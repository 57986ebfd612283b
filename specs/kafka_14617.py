"""Kafka 3.9 without KIP-903's broker-epoch check on AlterPartition (KAFKA-14617, before 3.5)."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import Kafka39KeepPending


class Kafka14617(Kafka39KeepPending):
    name = "kafka-14617"
    summary = ("Kafka 3.9 without KIP-903 (KRaft before 3.5): an AlterPartition built from a replica's fetch before "
               "it restarted is accepted after it registered again, so a replica that lost its unflushed log in a "
               "hard crash and came back without the records joins the ISR and can be elected. Here with "
               "min.insync.replicas=2 and hard crashes that lose the unflushed log tail (makeLeader's equal "
               "partition epoch fixed, so that only this ticket shows).")
    missing_fence = ("The controller accepts an AlterPartition whose ISR was built from a fetch of a replica's "
                     "previous incarnation; KIP-903 (3.5) sends each member's broker epoch and the controller "
                     "rejects a stale one (INELIGIBLE_REPLICA).")
    references = ("KAFKA-14617", "KIP-903")
    checks_broker_epochs = False
    defaults = {**Kafka39KeepPending.defaults, "min_isr": 2, "unflushed_loss": 1}
    configurations = {}
    #: liveness not part of the gate (kafka-3.9-keep-pending's; the check with properties takes a minute here)
    expected_liveness = dict.fromkeys(Kafka39KeepPending.liveness_expected()[0])
    expected = {**Kafka39KeepPending.expected, **{name: "violated" for name in (
        "no-committed-loss", "no-committed-loss-anywhere", "consistent-reads", "hw-monotonic", "strong-isr",
        "strong-live-isr", "candidates-complete")}}
    expected_why = {**KafkaReplication.expected_why,
        "strong-live-isr": "KAFKA-14617: the leader proposes adding a caught-up follower, the follower loses its "
                           "unflushed log in a hard crash, is fenced and registers again, and the controller, without "
                           "KIP-903's broker-epoch check, adds it to the ISR: a live member without a record below "
                           "the HW (kafka-3.9-keep-pending holds in its configuration last-replica-standing, at these "
                           "bounds)",
        **{name: "KIP-966's last replica standing (ELR off) at these bounds, as kafka-3.9-keep-pending's "
                 "configuration last-replica-standing" for name in (
            "no-committed-loss", "no-committed-loss-anywhere", "consistent-reads", "hw-monotonic", "strong-isr",
            "candidates-complete")}}
