"""Kafka 4.0 in KRaft mode: kafka-3.9 with eligible leader replicas (KIP-966) on."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import Kafka39


class Kafka40(Kafka39):
    name = "kafka-4.0"
    summary = ("Kafka 4.0 (KRaft): kafka-3.9 with eligible leader replicas (KIP-966): the ISR may become empty, "
               "replicas that leave an ISR below min.insync.replicas stay electable (ELR) unless their last stop "
               "was unclean; here with min.insync.replicas=2 and hard crashes that lose the unflushed log tail.")
    references = ("KIP-966", "KIP-903")
    defaults = {**Kafka39.defaults, "elr": 1, "min_isr": 2, "unflushed_loss": 1}
    expected = {**Kafka39.expected, "strong-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KIP-966: the HW stops below min.insync.replicas and a replica whose last stop was "
                             "unclean leaves the ELR; KIP-903 rejects an ISR expansion built from a replica's previous "
                             "incarnation (kafka-14617 loses a committed record at these bounds)",
        "strong-isr": "by design (as kip-966): a follower that lost committed records in a hard crash stays in the ISR "
                      "until the controller fences it, and cannot be elected before it registers again",
    }
    expected_liveness = {"eventually-leader": "holds", "hw-advances": "violated", "isr-regrows": "holds",
                         "truncation-terminates": "holds"}
    expected_liveness_why = {
        "hw-advances": "KIP-966 by design (as kip-966): the leader's ISR shrinks to itself, below min.insync.replicas "
                       "(here the follower's controlled shutdown), and the removed follower stops; the HW may not advance below min.insync.replicas, so a record "
                       "appended before stays above it until a replica returns. Fairness: weak fetch, "
                       "apply_leader_and_isr, truncate_on_fetch_response, alter_partition, apply_partition_change "
                       "(stopped brokers need not restart)"}
