"""Kafka 3.5 in KRaft mode: before KAFKA-15021 and KAFKA-15583 (the HW advances below min.insync.replicas)."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import Kafka39


class Kafka35(Kafka39):
    name = "kafka-3.5"
    summary = ("Kafka 3.5 (KRaft, 3.5.2): kafka-3.9 before KAFKA-15021 (3.6: every ISR shrink bumps the leader epoch, "
               "PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded; the HW waits for every caught-up replica, "
               "eligible or not) and KAFKA-15583 (3.7: the HW advances while the ISR is below min.insync.replicas); "
               "here with min.insync.replicas=2 and hard crashes that lose the unflushed log tail: KRaft's last "
               "replica standing.")
    references = ("KIP-966 (the last replica standing problem)", "KAFKA-15021", "KAFKA-15583", "KIP-903")
    missing_fence = ("A replica that lost data in an unclean shutdown stays the last ISR member through its fencing and "
                     "registration and is elected again; KIP-966 (4.0) empties the ISR, keeps replicas that left it "
                     "below min.insync.replicas as eligible leader replicas, and takes every replica that registers "
                     "again out of the ISR and the ELR.")
    shrink_keeps_leader_epoch = False
    hw_waits_for_eligible_only = False
    hw_stops_below_min_isr = False
    defaults = {**Kafka39.defaults, "min_isr": 2, "unflushed_loss": 1}
    configurations = {}
    expected = {**KafkaReplication.expected}
    expected_why = {**KafkaReplication.expected_why}
