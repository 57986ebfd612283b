"""Kafka 0.11 (KIP-101): truncate by OffsetsForLeaderEpoch instead of the high watermark."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.expr import min_of, where
from isrcheck.model.spec import action
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.progress import record_lost


class Kip101(KafkaReplication):
    name = "kip-101"
    summary = ("Kafka 0.11: a new follower asks the leader (OffsetsForLeaderEpoch) for the end offset "
               "of its latest epoch and truncates there; the answer carries no epoch.")
    references = ("KIP-101", "KAFKA-1211", "KAFKA-6361 (fast leader fail-over still diverges)")
    out_of_range_exits = True
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "holds",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "holds", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "a follower asks a stale leader, gets UNDEFINED and truncates to its HW, "
                             "then is elected (fenced by KIP-320; UNDEFINED answers fixed by KAFKA-7415)",
        "hw-monotonic": "the same truncation leaves the next leader's log below the committed HW",
        "strong-isr": "an ISR member truncates committed records to its HW on an UNDEFINED answer",
        "strong-live-isr": "the same: the truncating ISR member is live",
        "no-committed-loss-anywhere": "the same truncation; the stale leader then crashes and the truncated "
                                      "follower is elected: no electable replica holds the record",
    }
    expected_liveness, expected_liveness_why = record_lost(
        "a follower truncates the acknowledged record to its HW on a stale leader's UNDEFINED OffsetsForLeaderEpoch "
        "answer, is elected, and the stale leader, which alone held it, crashes")
    configurations = {
        "kafka-1211": Configuration(
            bounds={"max_epochs": 2}, expected={"no-committed-loss": "holds"},
            why={"no-committed-loss": "KAFKA-1211 fixed: truncation by OffsetsForLeaderEpoch, not to the HW "
                                      "(hw-truncation loses a committed record at these bounds)"}),
        "kafka-6361": Configuration(
            bounds={"max_records": 3}, expected={"log-matching": "violated"},
            why={"log-matching": "KAFKA-6361: after a fast leader fail-over the OffsetsForLeaderEpoch answer (an "
                                 "end offset, no epoch) lets the follower keep records the new leader replaced "
                                 "(a third record is needed; fixed by KIP-279 in 2.0)"}),
    }

    def become_follower(self, s, r, follows):
        """ReplicaManager.makeFollowers (0.11+): a restarted fetcher starts in the truncating state; no truncation to the HW."""
        s.truncating[r] = s.truncating[r] | follows

    def truncation_point(self, s, f, l):
        """ReplicaFetcherThread.maybeTruncate (0.11.0): the leader answers the end offset of f's latest epoch
        (LeaderEpochFileCache.endOffsetFor, the offset alone); UNDEFINED sends f back to its HW."""
        epoch = self.cache_latest_epoch(s, f)
        _, end = self.end_offset_for_epoch(s, l, epoch)
        offset = where(epoch == 0, s.leo[f], where(end < 0, s.hw[f], min_of([end, s.leo[f]])))
        return offset, True

    @action(f="REPLICAS", l="REPLICAS")
    def truncate_by_epoch(self, s, f, l):
        """Follower f sends OffsetsForLeaderEpoch to l, the leader it believes in, and truncates (AbstractFetcherThread.maybeTruncate)."""
        s.require((f != l) & s.up[f] & s.up[l] & s.truncating[f] & (s.leader[f] == l)
                  & self.believes_leads(s, l) & self.fetch_accepted(s, f, l))
        offset, done = self.truncation_point(s, f, l)
        self.truncate_to(s, f, offset)
        s.truncating[f] = where(done, False, True)
