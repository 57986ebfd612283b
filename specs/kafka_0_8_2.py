"""Kafka 0.8.2: the ISR by messages and by time (replica.lag.max.messages, replica.lag.time.max.ms), truncation to the HW.

What 0.8.2.2 does that hw-truncation (the model's Kafka before 0.11) leaves out, and how this version has it:

- Partition.getOutOfSyncReplicas drops a stuck follower (Replica.logEndOffsetUpdateTimeMs older than
  replica.lag.time.max.ms) or a slow one (a known LEO more than replica.lag.max.messages behind the leader's LEO):
  ``lag_rule = "message"``, the bound ``lag_max_messages``. Its one caller, Partition.maybeShrinkIsr, runs from
  ReplicaManager.maybeShrinkIsr, scheduled as "isr-expiration" every replica.lag.time.max.ms: ``shrink_isr``.
  logEndOffsetUpdateTimeMs is stamped by Replica.logEndOffset_=, called by ReplicaManager.updateReplicaLEOAndPartitionHW
  on every follower fetch (KafkaApis.handleFetchRequest -> recordFollowerLogEndOffsets: ``fetch``,
  ``fetch_response_lost``) and by Partition.makeLeader, which sets every follower's LEO to unknown
  (``apply_leader_and_isr``); time passes by ``lag_expires``.
- Partition.makeLeader resets the followers' LEOs on every LeaderAndIsr it applies as leader (isNewLeader comes in
  0.9): ``leader_keeps_fetch_state = False``.
- ReplicaFetcherThread.handleOffsetOutOfRange halts the broker (Runtime.halt, no shutdown hook) when a follower is
  ahead of its leader and unclean election is off: ``out_of_range_halts``.
- The ISR expansion rule is the model's: Partition.updateLeaderHWAndMaybeExpandIsr, on every follower fetch, adds an
  assigned replica whose LEO reached the leader's HW.

Departures (each a sound over-approximation for safety unless said):

- the leader drops one out-of-sync follower per step; maybeShrinkIsr drops them all in one ZooKeeper write;
- a fetch returns everything up to the leader's LEO (no replica.fetch.max.bytes), and a produce request carries one
  record: a burst is several appends with no time passing between them;
- with unclean election on, 0.8.2's leader records an out-of-range follower's LEO as unknown (and stamps its clock)
  before the follower truncates and fetches again; the model does both in one fetch and keeps the leader's record;
- unclean.leader.election.enable defaulted to true until 0.11 (KIP-106): the defaults keep it off, as hw-truncation
  does (``--set unclean=1`` turns it on); request.required.acks above 1 (0.8.2) is not modelled.
"""
from isrcheck.model.configuration import Configuration
from isrcheck.model.isr_lag import IsrLagProperties
from isrcheck.model.kafka import LAG_MAX_MESSAGES, KafkaReplication
from isrcheck.specs.hw_truncation import HwTruncation

#: what the versions with a lag rule expect of isr-drops-stuck-followers, and why (each states its own rule's case)
STUCK_FAIRNESS = "Fairness: weak lag_expires (time passes), weak shrink_isr (the leader's isr-expiration task)"


class Kafka082(IsrLagProperties, HwTruncation):
    name = "kafka-0.8.2"
    summary = ("Kafka 0.8.2: the leader drops a follower that has not fetched within replica.lag.time.max.ms or is "
               "more than replica.lag.max.messages behind its LEO, so a burst of appends drops a follower that keeps "
               "up; a replica that becomes follower truncates to its HW (before KIP-101).")
    references = ("KIP-16 (replica.lag.max.messages removed: the ISR by time alone, 0.9)", "KIP-101 (scenarios 1 and 2)",
                  "KAFKA-1211")
    lag_rule = "message"
    leader_keeps_fetch_state = False        # Partition.makeLeader (0.8.2): followers' LEOs reset on every LeaderAndIsr
    out_of_range_halts = True               # ReplicaFetcherThread.handleOffsetOutOfRange (0.8.2): Runtime.halt
    declared_bounds = KafkaReplication.declared_bounds + (LAG_MAX_MESSAGES,)
    defaults = {**{b.name: b.default for b in declared_bounds}, "max_epochs": 3}
    expected = {"isr-keeps-healthy-followers": "violated"}
    expected_why = {
        "isr-keeps-healthy-followers": "KIP-16: a burst of replica.lag.max.messages+1 appends leaves a follower that "
                                       "fetches all of it more than replica.lag.max.messages behind in the leader's "
                                       "eyes (the leader counts from the follower's fetch offset, so until its next "
                                       "fetch), and the isr-expiration task drops it; 0.9 counts time alone",
    }
    expected_liveness = {"isr-drops-stuck-followers": "holds"}
    expected_liveness_why = {
        "isr-drops-stuck-followers": "the stuck half of the rule: no fetch within replica.lag.time.max.ms. The "
                                     "message half alone misses it at a low rate: a stopped follower fewer than "
                                     "replica.lag.max.messages+1 records behind, or whose LEO the leader never "
                                     "learnt (a new leader's followers are unknown until they fetch), is never "
                                     "slow. " + STUCK_FAIRNESS,
    }
    configurations = {
        "burst": Configuration(
            bounds={"lag_max_messages": 2, "log_size": 3, "max_records": 3, "max_epochs": 1},
            expected={"isr-keeps-healthy-followers": "violated"},
            why={"isr-keeps-healthy-followers": "KIP-16's burst with replica.lag.max.messages=2: three appends, "
                                                "the follower fetches all three, and the leader, which still counts "
                                                "from its fetch offset, drops it (kafka-0.10.2 holds at these "
                                                "bounds)"}),
    }
