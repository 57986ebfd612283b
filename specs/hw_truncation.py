"""Kafka before 0.11: truncate to the local high watermark on becoming follower."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.expr import where
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.progress import record_lost


class HwTruncation(KafkaReplication):
    name = "hw-truncation"
    summary = ("Before Kafka 0.11: a replica that becomes follower (including after every restart) "
               "truncates its log to its own high watermark, which lags the leader's.")
    references = ("KIP-101 (scenarios 1 and 2)", "KAFKA-1211")
    out_of_range_exits = True
    leader_epoch_cache = False      # LeaderEpochFileCache comes with KIP-101 (0.11)
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "violated", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KIP-101 scenario 1 (KAFKA-1211): a bounced follower truncates to its lagging HW and "
                             "is elected",
        "log-matching": "KIP-101 scenario 2's divergence puts records of different epochs at one offset, which "
                        "log-matching allows: hw-log-matching catches it",
        "consistent-reads": "the new leader exposes offsets it truncated and rewrote",
        "hw-monotonic": "the new leader's log ends below the committed HW",
        "strong-isr": "an ISR member truncates committed records to its HW",
        "strong-live-isr": "a live ISR member truncates committed records to its HW on becoming follower",
        "no-committed-loss-anywhere": "KIP-101 scenario 1: once the old leader leaves the ISR, no electable replica "
                                      "holds the record the new leader truncated",
        "hw-log-matching": "KIP-101 scenario 2's signature: a bounced leader truncates to its HW and writes a new "
                           "record (new epoch) where its follower, still fetching from it, holds an older one; "
                           "both HWs pass the offset",
    }
    expected_liveness, expected_liveness_why = record_lost(
        "KIP-101 scenario 1: the follower truncates the acknowledged record to its HW on becoming follower, is "
        "elected, and the old leader, which alone held it, crashes")
    configurations = {
        "kafka-1211": Configuration(
            bounds={"max_epochs": 2}, expected={"no-committed-loss": "violated"},
            why={"no-committed-loss": "KAFKA-1211: a follower truncates to its lagging HW on becoming follower and "
                                      "is elected without a committed record (kip-101 holds at these bounds)"}),
    }

    def become_follower(self, s, r, follows):
        """ReplicaManager.makeFollowers (0.8-0.10): truncate to the local HW, then fetch from there."""
        self.truncate_to(s, r, where(follows, s.hw[r], self.L))
