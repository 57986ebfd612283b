"""Kafka 4.0.0: the controller elects the last known leader even while it is fenced (KAFKA-19522)."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import PROGRESS_FAIRNESS
from isrcheck.specs.kafka_4_0 import Kafka40KeepPending


class Kafka19522(Kafka40KeepPending):
    name = "kafka-19522"
    summary = ("Kafka 4.0.0 (and trunk of late 2024) with ELR on: PartitionChangeBuilder.canElectLastKnownLeader "
               "only logs when the last known leader is not acceptable and elects it anyway, so a leaderless "
               "partition whose ISR and ELR are empty is given a fenced broker as leader. (makeLeader's equal "
               "partition epoch is fixed here, so that only this ticket shows.)")
    missing_fence = ("canElectLastKnownLeader returns true for a fenced last known leader; the fix (KAFKA-19522, "
                     "4.0.1/4.1) returns false unless the broker is acceptable (unfenced, not in controlled shutdown).")
    references = ("KAFKA-19522", "KIP-966")
    elects_fenced_last_known_leader = True
    #: the last known leader needs both replicas down once (kafka-4.0's configuration last-known-leader)
    defaults = {**Kafka40KeepPending.defaults, "max_crashes": 2, "max_records": 1, "log_size": 1}
    configurations = {}
    expected_liveness = {"isr-regrows": "violated", "acked-fully-replicated": "violated"}
    expected_liveness_why = {
        "acked-fully-replicated": "KIP-966's last known leader (no-committed-loss): both replicas lose the record in "
                                  "hard crashes and the last known leader is elected without it; no live ISR member "
                                  f"holds it or can fetch it any more. {PROGRESS_FAIRNESS}",
        "isr-regrows": "KAFKA-19522: the last known leader is elected while in controlled shutdown; as a member of "
                       "its own proposed ISR it is ineligible (INELIGIBLE_REPLICA), so the ISR cannot grow until it "
                       "stops (its shutdown needs no fairness). Fairness: weak fetch, apply_metadata, "
                       "truncate_on_fetch_response, alter_partition, unfence_broker; strong alter_partition_response"}
    expected = {**Kafka40KeepPending.expected, "leader-unfenced": "violated", "no-committed-loss": "violated",
                "no-committed-loss-anywhere": "violated", "hw-monotonic": "violated", "candidates-complete": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "leader-unfenced": "KAFKA-19522: with the ISR and the ELR empty, the controller elects the partition's last "
                           "known leader while it is fenced (kafka-4.0 holds at these bounds)",
        "no-committed-loss": "KIP-966's last known leader, as kafka-4.0's configuration last-known-leader loses a "
                             "record at these bounds (both replicas lose it in hard crashes)",
        "no-committed-loss-anywhere": "the same",
        "candidates-complete": "the same: the elected last known leader is in the ISR without the record",
        "hw-monotonic": "the same: its log ends below the HW consumers saw"}
