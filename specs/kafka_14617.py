"""Kafka 4.0 without KIP-903's broker-epoch check on AlterPartition (KAFKA-14617)."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_4_0 import Kafka40KeepPending


class Kafka14617(Kafka40KeepPending):
    name = "kafka-14617"
    summary = ("Kafka 4.0 without KIP-903 (before 3.5): an AlterPartition built from a replica's fetch before it "
               "restarted is accepted after it registered again, so a replica that lost its unflushed log in a "
               "hard crash and came back without the records joins the ISR and can be elected.")
    missing_fence = ("The controller accepts an AlterPartition whose ISR was built from a fetch of a replica's "
                     "previous incarnation; KIP-903 (3.5) sends each member's broker epoch and the controller "
                     "rejects a stale one (INELIGIBLE_REPLICA).")
    references = ("KAFKA-14617", "KIP-903")
    checks_broker_epochs = False
    #: liveness not part of the gate: the check at the defaults takes a minute (2.5M states); measured, it gives
    #: kafka-4.0's verdicts
    expected_liveness = dict.fromkeys(("eventually-leader", "hw-advances", "isr-regrows", "truncation-terminates"))
    expected = {**Kafka40KeepPending.expected, **{name: "violated" for name in (
        "no-committed-loss", "no-committed-loss-anywhere", "consistent-reads", "hw-monotonic", "strong-live-isr")}}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-14617: the leader proposes adding a caught-up follower, the follower loses its "
                             "unflushed log in a hard crash and registers again, and the controller, without KIP-903's "
                             "broker-epoch check, adds it to the ISR; the leader acknowledges the record and the "
                             "empty follower is elected (kafka-4.0 holds at these bounds)",
        "no-committed-loss-anywhere": "the same: then no electable replica holds the record",
        "consistent-reads": "the same: the elected follower serves another record at an offset consumers read",
        "hw-monotonic": "the same: the elected follower's log ends below the HW consumers saw",
        "strong-live-isr": "the re-registered follower is a live ISR member without the committed record",
    }
