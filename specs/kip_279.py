"""Kafka 2.0 (KIP-279): the OffsetsForLeaderEpoch answer carries the epoch, matched backwards."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_101 import Kip101


#: where KAFKA-7128 shows (specs/kafka_7128.py's defaults): three replicas, one record, a lost fetch response
KAFKA_7128_BOUNDS = {"replicas": 3, "log_size": 1, "max_records": 1, "max_epochs": 3, "max_crashes": 0,
                     "fetch_response_loss": 1}


class Kip279(Kip101):
    name = "kip-279"
    summary = ("Kafka 2.0: the leader answers with the largest epoch it has at or below the follower's "
               "and that epoch's end offset; the follower truncates to the smaller of both end offsets "
               "for that epoch and repeats while it does not hold that epoch.")
    references = ("KIP-279", "KAFKA-6361", "KAFKA-7128 (lagging HW lets a follower rejoin the ISR too early)")
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "holds",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "holds", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "fetches are not fenced by epoch: a stale leader's UNDEFINED answer sends a "
                             "follower back to its HW (KIP-320, KAFKA-7415)",
        "hw-monotonic": "the same truncation leaves the next leader's log below the committed HW",
        "strong-isr": "an ISR member truncates committed records to its HW on an UNDEFINED answer",
        "strong-live-isr": "the same: the truncating ISR member is live",
        "no-committed-loss-anywhere": "the same truncation; the stale leader then crashes and the truncated "
                                      "follower is elected: no electable replica holds the record",
    }
    configurations = {
        "kafka-6361": Configuration(
            bounds={"max_records": 3}, expected={"log-matching": "violated"},
            why={"log-matching": "KAFKA-6361 is fixed (the answer carries the epoch and the follower matches it "
                                 "backwards), but 2.0.0 still diverges here another way: a follower whose cache "
                                 "starts above the leader's answer gets UNDEFINED from its own LeaderEpochFileCache"
                                 ".endOffsetFor (requestedEpoch < epochs.head.epoch) and keeps its log up to the "
                                 "leader's end offset (AbstractFetcherThread.getOffsetTruncationState, 2.0.0); "
                                 "2.0.1 answers the first entry's start offset instead (KAFKA-7415's change) and "
                                 "kafka-2.0.1 holds at these bounds"}),
        "kafka-6880": Configuration(
            bounds={"max_records": 3}, expected={"hw-log-matching": "violated"},
            why={"hw-log-matching": "KAFKA-6880: fetches are not fenced by the leader epoch, so a zombie follower "
                                    "fetches across epochs and 2.0's cache ignores the older epoch: two replicas "
                                    "hold different records below their HWs (kip-320 holds at these bounds). The "
                                    "shortest trace here is 2.0.0's UNDEFINED answer below the follower's first "
                                    "cache entry (see kafka-6361); KAFKA-6880's own 15 steps are "
                                    "tests/test_scenarios.py's KAFKA_6880, and kafka-2.0.1's configuration shows it "
                                    "alone"}),
        "kafka-7128": Configuration(
            bounds=KAFKA_7128_BOUNDS, expected={"no-committed-loss": "violated"},
            why={"no-committed-loss": "KAFKA-7128: a follower whose fetch offset reached a new leader's lagging HW "
                                      "joins the ISR without the committed record and is elected (kip-320 holds "
                                      "at these bounds)"}),
    }

    def truncation_point(self, s, f, l):
        """AbstractFetcherThread.getOffsetTruncationState (2.0) on l's OffsetsForLeaderEpoch answer."""
        leader_epoch, leader_end = self.end_offset_for_epoch(s, l, self.cache_latest_epoch(s, f))
        return self.offset_truncation_state(s, f, leader_epoch, leader_end)
