"""Kafka 3.9 without the fix of KAFKA-14704: the follower applies the HW of a DivergingEpoch response before truncating."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import Kafka39KeepPending


class Kafka14704(Kafka39KeepPending):
    name = "kafka-14704"
    summary = ("Kafka 3.9 (makeLeader's equal partition epoch fixed, so that only this ticket shows) with "
               "KAFKA-14704 back (2.7-3.4): a follower processes a fetch response that carries "
               "DivergingEpoch like any other and raises its HW to the leader's before it truncates, so for a while "
               "(and, checkpointed, across a crash) its HW covers records that were never committed.")
    missing_fence = ("The follower applies the HW of a DivergingEpoch response before it truncates; since 3.5 "
                     "AbstractFetcherThread.processFetchRequest truncates first and leaves the HW to the next fetch.")
    references = ("KAFKA-14704",)
    hw_before_truncation = True
    expected = {**Kafka39KeepPending.expected, "hw-log-matching": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "hw-log-matching": "KAFKA-14704: the follower's HW rises to the leader's over its own diverging record before "
                           "it truncates: below both HWs the logs differ (kafka-3.9-keep-pending holds at these bounds)"}
