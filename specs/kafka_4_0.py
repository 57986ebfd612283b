"""Kafka 4.0 in KRaft mode: kafka-3.9 with eligible leader replicas (KIP-966) on; and the same with its
equal-partition-epoch makeLeader fixed."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kafka_3_9 import MOVE, PROGRESS_FAIRNESS, REAPPLY_WHY, SAFETY, Kafka39, lifted, reassignment

#: three replicas, min.insync.replicas=2 (the defaults), one leader epoch, no crash
PROBE = {"replicas": 3, "max_epochs": 1, "max_crashes": 0, "unflushed_loss": 0}
#: two replicas, min.insync.replicas=1 (Kafka's default), no unflushed loss (with it, a lone ISR member's hard crash
#: loses what it acknowledged: what min.insync.replicas=1 accepts)
MIN_ISR_1 = {"min_isr": 1, "unflushed_loss": 0}
#: one reassignment moves the partition from its only replica to the other broker; no crash: with one replica (the
#: effective min.insync.replicas 1) a crash of it loses the partition by KIP-966's design (fenced, it joins the ELR;
#: registering again, an unclean shutdown for the controller, it leaves it), as it would without the reassignment
MOVE_NO_CRASH = {**MOVE, "max_crashes": 0}


class Kafka40(Kafka39):
    name = "kafka-4.0"
    summary = ("Kafka 4.0 (KRaft, the 4.0 line of trunk with KAFKA-19522 fixed): kafka-3.9 with eligible leader "
               "replicas (KIP-966): the ISR may become empty, replicas that leave an ISR below min.insync.replicas "
               "stay electable (ELR), and every broker that registers again leaves the ISR and the ELR (the "
               "controller takes each new incarnation for an unclean shutdown); opt-in in 4.0 "
               "(eligible.leader.replicas.version=1; on by default for new clusters from 4.1); here with "
               "min.insync.replicas=2 and hard crashes that lose the unflushed log tail. strong-isr is not checked: "
               "with unflushed_loss a hard-crashed ISR member lacks committed records until the controller fences "
               "it, which KIP-966 takes as given (it keeps such a replica from being elected instead); "
               "strong-live-isr is the form 4.0 keeps.")
    references = ("KIP-966", "KIP-903", "KAFKA-19522 (fixed here)")
    defaults = {**Kafka39.defaults, "elr": 1, "min_isr": 2, "unflushed_loss": 1}
    #: KIP-966 ("Motivation": a replica's unflushed tail is lost in an unclean shutdown, yet it stays in the ISR
    #: until fenced) gives up "every ISR member holds every committed record" and promises instead that no replica
    #: lacking one is elected: strong-live-isr and no-committed-loss(-anywhere) are what 4.0 claims
    dropped_invariants = ("strong-isr",)
    expected = {**KafkaReplication.expected, **{name: "holds" for name in SAFETY if name != "strong-isr"},
                "maximal-isr-covers-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "maximal-isr-covers-isr": f"{REAPPLY_WHY}; with two replicas and min.insync.replicas=2 the HW stops below "
                                  "min.insync.replicas (KAFKA-15583), so no record is exposed (configuration probe: "
                                  "three replicas)",
        "no-committed-loss": "KIP-966: the HW stops below min.insync.replicas and a replica that registers again "
                             "leaves the ELR; KIP-903 rejects an ISR expansion built from a replica's previous "
                             "incarnation (kafka-14617 loses a committed record at these bounds)",
        "strong-live-isr": "a hard-crashed member that lost committed records is out of the ISR before it runs again "
                           "(fenced, then registered anew: ReplicationControlManager.handleBrokerFenced / "
                           "handleBrokerUncleanShutdown)",
        "leader-unfenced": "PartitionChangeBuilder.canElectLastKnownLeader elects the last known leader only once it "
                           "is acceptable (KAFKA-19522 fixed; kafka-19522 breaks it at these bounds)",
    }
    configurations = {
        "probe": Configuration(
            bounds=PROBE, expected={"strong-live-isr": "violated", "maximal-isr-covers-isr": "violated"},
            why={"strong-live-isr": f"{REAPPLY_WHY}; three replicas, one leader epoch, no crash: the new member "
                                    "lacks a record below the HW",
                 "maximal-isr-covers-isr": REAPPLY_WHY}),
        "min-isr-1": Configuration(
            bounds=MIN_ISR_1, expected={"no-committed-loss": "violated", "log-matching": "holds"},
            why={"no-committed-loss": f"{REAPPLY_WHY}; with min.insync.replicas=1 the HW passes the record with the "
                                      "leader alone in its ISR, and the new member is elected (three replicas at "
                                      "min.insync.replicas=2 lose it too, past the gate's reach: "
                                      "docs/findings/makeleader-equal-epoch.md)"}),
        "last-known-leader": Configuration(
            bounds={"max_crashes": 2, "max_records": 1, "log_size": 1},
            expected={"no-committed-loss": "violated", "leader-unfenced": "holds"},
            why={"no-committed-loss": "KIP-966's last known leader (4.0): both replicas lose a committed record in "
                                      "hard crashes; fenced, they join the ELR (the controller does not know the "
                                      "crashes were unclean), registering again takes each out of it, and the "
                                      "controller elects the last known leader without the record "
                                      "(PartitionChangeBuilder.canElectLastKnownLeader): what Kafka did before 4.0 "
                                      "when every replica was offline; no replica holds the record any more",
                 "leader-unfenced": "the last known leader is elected once it is unfenced (kafka-19522 breaks it at "
                                    "these bounds)"}),
    }
    expected_liveness = {"eventually-leader": "holds", "hw-advances": "holds", "isr-regrows": "holds",
                         "truncation-terminates": "holds", "acked-fully-replicated": "holds"}
    expected_liveness_why = {
        "acked-fully-replicated": "no acknowledged record is lost at these bounds (2 replicas, min.insync.replicas=2: "
                                  "the HW stops below min.insync.replicas, so the equal-epoch makeLeader exposes no "
                                  "record; configuration min-isr-1 loses one)",
        "write-resolves": "KIP-966 by design (KAFKA-15583): a record appended while both replicas were in the ISR; "
                          "the follower crashes and the controller fences it out of the ISR, below "
                          "min.insync.replicas the HW does not advance, and the acks=all request waits for its "
                          f"timeout (NOT_ENOUGH_REPLICAS answers only new appends). {PROGRESS_FAIRNESS}",
        "hw-advances": "at these bounds (2 replicas, min.insync.replicas=2) the HW waits for both replicas: a follower "
                       "out of the ISR leaves it below min.insync.replicas, so no HW is computed without it "
                       "(KAFKA-15583); it rejoins by fetching and AlterPartition, or it stops, and with fewer "
                       "acceptable brokers than min.insync.replicas the obligation ends (by design). kafka-3.9's "
                       "stale caught-up follower needs an ISR of min.insync.replicas without it (3 replicas here). "
                       "Fairness: weak fetch, apply_metadata, truncate_on_fetch_response, alter_partition, "
                       "unfence_broker; strong alter_partition_response"}


class Kafka40KeepPending(Kafka40):
    name = "kafka-4.0-keep-pending"
    summary = ("kafka-4.0 with makeLeader keeping a pending AlterPartition on an equal partition epoch (the fix "
               "kafka-3.9-keep-pending applies to 3.9).")
    references = ("KIP-966", "KIP-903")
    make_leader_keeps_pending = True
    expected = {**KafkaReplication.expected, **{name: "holds" for name in SAFETY if name != "strong-isr"}}
    expected_why = {**Kafka40.expected_why,
        "maximal-isr-covers-isr": "makeLeader keeps the pending AlterPartition on an equal partition epoch (kafka-4.0 "
                                  "breaks it at these bounds)"}
    configurations = {
        "probe": Configuration(
            bounds=PROBE, expected={"strong-live-isr": "holds", "maximal-isr-covers-isr": "holds"},
            why={"strong-live-isr": "the fix holds where kafka-4.0 breaks strong-live-isr",
                 "maximal-isr-covers-isr": "the fix holds where kafka-4.0 breaks it"}),
        "min-isr-1": Configuration(
            bounds=MIN_ISR_1, expected={"no-committed-loss": "holds", "maximal-isr-covers-isr": "holds"},
            why={"no-committed-loss": "the fix holds where kafka-4.0 loses the record"}),
        "reassignment": reassignment(MOVE_NO_CRASH, dropped=Kafka40.dropped_invariants),
    }
