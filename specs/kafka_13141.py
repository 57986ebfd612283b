"""Kafka 3.9 without the fix of KAFKA-13141: the leader records a diverging follower's fetch offset."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import PROGRESS_FAIRNESS, Kafka39KeepPending


class Kafka13141(Kafka39KeepPending):
    name = "kafka-13141"
    summary = ("Kafka 3.9 (makeLeader's equal partition epoch fixed, so that only this ticket shows) with "
               "KAFKA-13141 back (2.7.0-2.7.1, 2.8.0): a fetch answered with DivergingEpoch still "
               "updates the follower's fetch state on the leader, so the leader counts the diverging follower's "
               "LEO as replicated and raises its HW over a record the follower does not have.")
    missing_fence = ("The leader records a follower's fetch offset even when the fetch is answered with "
                     "DivergingEpoch; since 2.7.2/3.0 ReplicaManager.updateFollowerFetchState skips such a read.")
    references = ("KAFKA-13141",)
    records_diverging_fetch = True
    expected = {**Kafka39KeepPending.expected, **{name: "violated" for name in (
        "no-committed-loss", "no-committed-loss-anywhere", "hw-log-matching", "consistent-reads", "hw-monotonic",
        "strong-isr", "strong-live-isr", "candidates-complete")}}
    expected_liveness = {"acked-fully-replicated": "violated"}
    expected_liveness_why = {
        "acked-fully-replicated": "the same loss: the elected follower truncated the acknowledged record, which no "
                                  f"live ISR member holds or can fetch any more. {PROGRESS_FAIRNESS}"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-13141: a deposed leader answers its follower's fetch with DivergingEpoch but "
                             "records the fetch offset, counts the diverging record as replicated and acknowledges "
                             "its own; the follower, elected, truncates it (kafka-3.9-keep-pending holds at these bounds)",
        "no-committed-loss-anywhere": "the same: the acknowledged record is on no replica that can be elected",
        "hw-log-matching": "the same fetch raises the leader's HW over an offset where the follower holds another "
                           "record",
        "consistent-reads": "the acknowledged record was exposed; the new leader serves another one at its offset",
        "hw-monotonic": "the new leader's log ends below the HW consumers saw",
        "strong-isr": "the follower stays in the ISR without the record below the leader's HW",
        "strong-live-isr": "the same: that follower is live",
        "candidates-complete": "the same: that follower, an electable ISR member, lacks the acknowledged record",
    }
