"""Kafka 0.9: the ISR by time alone (KIP-16: replica.lag.time.max.ms), truncation to the HW.

What 0.9.0.1 does that hw-truncation (the model's Kafka before 0.11) leaves out, and how this version has it:

- Partition.getOutOfSyncReplicas drops a follower whose Replica.lastCaughtUpTimeMs is older than
  replica.lag.time.max.ms: ``lag_rule = "time"``. Its one caller, Partition.maybeShrinkIsr, runs from
  ReplicaManager.maybeShrinkIsr, scheduled as "isr-expiration" every replica.lag.time.max.ms: ``shrink_isr``.
  Replica.updateLogReadResult stamps lastCaughtUpTimeMs when the fetch started at the LEO the leader had when it read
  (ReplicaManager.readFromLocalLog's readToEndOfLog); its callers: Partition.updateReplicaLogReadResult, from
  ReplicaManager.updateFollowerLogReadResults on every follower fetch (``fetch``, ``fetch_response_lost``), and
  Partition.makeLeader for a new leader, with UnknownLogReadResult, which stamps nothing (``apply_leader_and_isr``).
  Time passes by ``lag_expires`` (no fetch) and ``catch_up_lapses`` (fetches, none from the log end).
- A new leader keeps the lastCaughtUpTimeMs its Replica objects had, however old (they live as long as the broker
  holds the partition): the clocks run whenever it holds one (``lag_clock_runs``).
- ReplicaFetcherThread.handleOffsetOutOfRange halts the broker (Runtime.halt) when a follower is ahead of its leader
  and unclean election is off: ``out_of_range_halts``.
- The ISR expansion rule is the model's: Partition.maybeExpandIsr, on every follower fetch, adds an assigned replica
  whose LEO reached the leader's HW.

Departures: as kafka-0.8.2 (one follower dropped per step, a fetch returns everything, one record per produce request,
an out-of-range fetch with unclean election on, unclean election off by default).
"""
from isrcheck.model.configuration import Configuration
from isrcheck.model.isr_lag import IsrLagProperties
from isrcheck.specs.hw_truncation import HwTruncation
from isrcheck.specs.kafka_0_8_2 import STUCK_FAIRNESS


class Kafka09(IsrLagProperties, HwTruncation):
    name = "kafka-0.9"
    summary = ("Kafka 0.9 (KIP-16): the leader drops a follower that has not fetched from its log end within "
               "replica.lag.time.max.ms; only a fetch that starts at the log end counts, and a new leader keeps the "
               "catch-up times it had (KAFKA-4485); a replica that becomes follower truncates to its HW.")
    references = ("KIP-16 (the ISR by replica.lag.time.max.ms alone)",
                  "KAFKA-4485 (a follower that fetches all the leader appends is not counted caught up; fixed in "
                  "0.10.2)", "KIP-101 (scenarios 1 and 2)", "KAFKA-1211")
    lag_rule = "time"
    out_of_range_halts = True               # ReplicaFetcherThread.handleOffsetOutOfRange (0.9.0): Runtime.halt
    defaults = {**HwTruncation.defaults, "max_epochs": 3}
    expected = {"isr-keeps-healthy-followers": "violated"}
    expected_why = {
        "isr-keeps-healthy-followers": "KAFKA-4485: a broker that becomes leader judges its followers by the "
                                       "lastCaughtUpTimeMs it kept from before (0.9 resets it only from 0.10.2), so "
                                       "its first isr-expiration run drops a follower that has had no time to fetch",
    }
    expected_liveness = {"isr-drops-stuck-followers": "holds"}
    expected_liveness_why = {
        "isr-drops-stuck-followers": "KIP-16: a stopped follower's lastCaughtUpTimeMs runs out whatever the rate of "
                                     "appends, where 0.8.2's message count alone would miss it. " + STUCK_FAIRNESS,
    }
    configurations = {
        "kafka-4485": Configuration(
            bounds={"max_epochs": 1},
            expected={"isr-keeps-healthy-followers": "violated"},
            why={"isr-keeps-healthy-followers": "KAFKA-4485: a follower that fetches everything the leader appends, "
                                                "but always after the next append, never fetches from the log end, "
                                                "so replica.lag.time.max.ms later the leader drops it (kafka-0.10.2 "
                                                "holds at these bounds)"}),
    }
