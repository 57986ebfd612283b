"""Kafka 4.0 in KRaft mode: kafka-3.9 with eligible leader replicas (KIP-966) on."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import Kafka39


class Kafka40(Kafka39):
    name = "kafka-4.0"
    summary = ("Kafka 4.0 (KRaft): kafka-3.9 with eligible leader replicas (KIP-966): the ISR may become empty, "
               "replicas that leave an ISR below min.insync.replicas stay electable (ELR) unless their last stop "
               "was unclean (opt-in in 4.0: eligible.leader.replicas.version=1; on by default for new clusters "
               "from 4.1); here with min.insync.replicas=2 and hard crashes that lose the unflushed log tail. "
               "strong-isr is not checked: with unflushed_loss a hard-crashed ISR member lacks committed records "
               "until the controller fences it, which KIP-966 takes as given (it keeps such a replica from being "
               "elected instead); strong-live-isr is the form 4.0 keeps.")
    references = ("KIP-966", "KIP-903")
    defaults = {**Kafka39.defaults, "elr": 1, "min_isr": 2, "unflushed_loss": 1}
    #: KIP-966 ("Motivation": a replica's unflushed tail is lost in an unclean shutdown, yet it stays in the ISR
    #: until fenced) gives up "every ISR member holds every committed record" and promises instead that no replica
    #: lacking one is elected: strong-live-isr and no-committed-loss(-anywhere) are what 4.0 claims
    dropped_invariants = ("strong-isr",)
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KIP-966: the HW stops below min.insync.replicas and a replica whose last stop was "
                             "unclean leaves the ELR; KIP-903 rejects an ISR expansion built from a replica's previous "
                             "incarnation (kafka-14617 loses a committed record at these bounds)",
        "strong-live-isr": "a hard-crashed member that lost committed records is out of the ISR before it runs again "
                           "(fenced, then registered anew: ReplicationControlManager.handleBrokerFenced / "
                           "handleBrokerUncleanShutdown)",
    }
    configurations = {
        "last-known-leader": Configuration(
            bounds={"max_crashes": 2, "max_records": 1, "log_size": 1}, expected={"no-committed-loss": "violated"},
            why={"no-committed-loss": "KIP-966's last known leader (4.0): both replicas lose a committed record in "
                                      "hard crashes; the leader's fencing empties the ISR (lastKnownElr: the "
                                      "leader), neither is in the ELR after an unclean stop, and the controller "
                                      "elects the last known leader again without the record "
                                      "(PartitionChangeBuilder.canElectLastKnownLeader): what Kafka did before 4.0 "
                                      "when every replica was offline; no replica holds the record any more"}),
    }
    expected_liveness = {"eventually-leader": "holds", "hw-advances": "holds", "isr-regrows": "holds",
                         "truncation-terminates": "holds"}
    expected_liveness_why = {
        "write-resolves": "KIP-966 by design (KAFKA-15583): a record appended while both replicas were in the ISR; "
                          "the follower crashes and the controller fences it out of the ISR, below "
                          "min.insync.replicas the HW does not advance, and the acks=all request waits for its "
                          "timeout (NOT_ENOUGH_REPLICAS answers only new appends). Fairness: weak fetch, "
                          "apply_leader_and_isr, truncate_on_fetch_response, alter_partition, apply_partition_change, "
                          "controller_shrink_isr",
        "hw-advances": "at these bounds (2 replicas, min.insync.replicas=2) the HW waits for both replicas: a follower "
                       "out of the ISR leaves it below min.insync.replicas, so no HW is computed without it "
                       "(KAFKA-15583); it rejoins by fetching and AlterPartition, or it stops, and with fewer ISR-"
                       "eligible brokers than min.insync.replicas the obligation ends (by design). kafka-3.9's "
                       "stale caught-up follower needs an ISR of min.insync.replicas without it (3 replicas here). "
                       "Fairness: weak fetch, apply_leader_and_isr, truncate_on_fetch_response, alter_partition, "
                       "apply_partition_change"}
