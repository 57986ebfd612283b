"""Kafka before 0.11: truncate to the local high watermark on becoming follower."""
from model.expr import where
from model.kafka import KafkaReplication


class HwTruncation(KafkaReplication):
    name = "hw-truncation"
    summary = ("Before Kafka 0.11: a replica that becomes follower (including after every restart) "
               "truncates its log to its own high watermark, which lags the leader's.")
    references = ("KIP-101 (scenarios 1 and 2)", "KAFKA-1211")

    def become_follower(self, s, r, follows):
        """ReplicaManager.makeFollowers (0.8-0.10): truncate to the local HW, then fetch from there."""
        self.truncate_to(s, r, where(follows, s.hw[r], self.L))
