"""Kafka 0.10.2: the ISR by time (KIP-16) as KAFKA-4485 left it, truncation to the HW.

What 0.10.2.2 changes from kafka-0.9, and how this version has it:

- Replica.updateLogReadResult also counts a fetch that starts at or past the leader's LEO as of the follower's
  previous fetch, caught up as of that fetch (lastFetchLeaderLogEndOffset, lastFetchTimeMs), and keeps the latest
  catch-up time: ``caught_up_by_previous_fetch``. Its callers are kafka-0.9's; Partition.makeLeader first calls
  Replica.resetLastCaughtUpTime on every follower, every time (ISR members caught up now, the others never), and a new
  leader then records UnknownLogReadResult, whose lastFetchTimeMs of -1 leaves no previous fetch to count.
- Partition.maybeIncrementLeaderHW takes the minimum LEO over the ISR and every replica caught up within
  replica.lag.time.max.ms (``hw_isr_member``), while Partition.checkEnoughReplicasReachOffset still counts the ISR
  against min.insync.replicas (``enough_replicas``).
- ReplicaFetcherThread.handleOffsetOutOfRange exits (System.exit, through the shutdown hook): ``out_of_range_exits``
  as in hw-truncation. The "isr-expiration" task runs every replica.lag.time.max.ms / 2 (the model does not time it).

Departures: as kafka-0.8.2 (one follower dropped per step, a fetch returns everything, one record per produce request,
an out-of-range fetch with unclean election on, unclean election off by default).
"""
from isrcheck.model.configuration import Configuration
from isrcheck.model.expr import count_of
from isrcheck.specs.kafka_0_9 import Kafka09
from isrcheck.specs.kafka_0_8_2 import STUCK_FAIRNESS


class Kafka0102(Kafka09):
    name = "kafka-0.10.2"
    summary = ("Kafka 0.10.2 (KAFKA-4485): a follower that keeps fetching everything the leader appends counts as "
               "caught up, a new leader starts its ISR members' clocks afresh, and the HW also waits for caught-up "
               "replicas outside the ISR; a replica that becomes follower truncates to its HW (before KIP-101).")
    references = ("KAFKA-4485 (a follower is caught up when its fetch reaches the leader's LEO of its previous fetch; "
                  "fixed here)", "KIP-101 (scenarios 1 and 2)", "KAFKA-1211")
    caught_up_by_previous_fetch = True
    out_of_range_halts = False              # ReplicaFetcherThread.handleOffsetOutOfRange (0.10.2): System.exit
    expected = {"isr-keeps-healthy-followers": "holds"}
    expected_why = {
        "isr-keeps-healthy-followers": "KAFKA-4485 fixed: a new leader starts its ISR members' clocks afresh, and a "
                                       "fetch that reaches the leader's LEO of the previous one counts as caught up "
                                       "(kafka-0.9 drops a follower that keeps fetching at these bounds)",
    }
    #: write-resolves (model/kafka.py) not triaged: a caught-up follower outside the ISR holds the HW back
    #: (hw_isr_member) until replica.lag.time.max.ms passes, and nothing recomputes the HW when it does
    expected_liveness = {"isr-drops-stuck-followers": "holds", "write-resolves": None}
    expected_liveness_why = {
        "isr-drops-stuck-followers": "as in 0.9: a stopped follower's lastCaughtUpTimeMs runs out. " + STUCK_FAIRNESS,
    }
    configurations = {
        "kafka-4485": Configuration(
            bounds={"max_epochs": 1},
            expected={"isr-keeps-healthy-followers": "holds"},
            why={"isr-keeps-healthy-followers": "KAFKA-4485 fixed: a follower that fetches everything the leader "
                                                "appends is caught up as of its previous fetch (kafka-0.9 drops it "
                                                "at these bounds)"}),
        "burst": Configuration(
            bounds={"log_size": 3, "max_records": 3, "max_epochs": 1},
            expected={"isr-keeps-healthy-followers": "holds"},
            why={"isr-keeps-healthy-followers": "KIP-16: time alone decides; a burst of three appends drops no "
                                                "follower that keeps fetching (kafka-0.8.2 drops it at these bounds "
                                                "with replica.lag.max.messages=2)"}),
    }

    def hw_isr_member(self, s, l, i):
        """Partition.maybeIncrementLeaderHW (0.10.2, KAFKA-4485): the ISR, and every replica caught up within
        replica.lag.time.max.ms though outside it."""
        if i == l:
            return s.isr[l][i]
        return s.isr[l][i] | s.caught_up[l][i]

    def enough_replicas(self, s, l):
        """Partition.checkEnoughReplicasReachOffset (0.10.2): the ISR itself has min.insync.replicas members."""
        return count_of(s.isr[l][i] for i in self.REPLICAS) >= self.min_isr
