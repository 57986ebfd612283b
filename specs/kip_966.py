"""KIP-966 (Kafka 4.0): strict min.insync.replicas for the HW, and eligible leader replicas."""
from isrcheck.model.expr import count_of
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.last_replica_standing import LastReplicaStanding
from isrcheck.specs.progress import FAIRNESS


class Kip966(LastReplicaStanding):
    name = "kip-966"
    summary = ("Kafka 4.0 (KIP-966): the HW advances only while the ISR has min.insync.replicas members; "
               "replicas that leave a smaller ISR stay eligible (ELR) and the ISR may become empty; a replica "
               "that restarts after an unclean shutdown leaves the ISR and the ELR until it catches up.")
    missing_fence = None
    references = ("KIP-966 (Eligible Leader Replicas)", "KAFKA-15583", "KIP-903 (stale broker epochs leave the ISR)")
    defaults = {**LastReplicaStanding.defaults, "elr": 1}
    not_modelled = {"KIP-903": "the model has no broker epochs, so the race KIP-903 closes (an ISR expansion built "
                               "from a fetch of a replica's previous incarnation) cannot occur"}
    expected = {**LastReplicaStanding.expected, "no-committed-loss": "holds", "consistent-reads": "holds",
                "hw-monotonic": "holds", "no-committed-loss-anywhere": "holds"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-15583: the HW advances only while the ISR has min.insync.replicas members, and "
                             "ELR keeps a replica that lost data from election (last-replica-standing, elr=0, loses "
                             "a committed record at these bounds)",
        "strong-isr": "a follower that lost committed records in a hard crash stays in the ISR until the "
                      "controller notices; KIP-966 keeps it from being elected (it leaves the ISR and the ELR "
                      "before it registers again)",
    }

    expected_liveness = {"eventually-leader": "holds", "isr-regrows": "holds", "truncation-terminates": "holds",
                         "hw-advances": "violated", "write-resolves": "violated", "acked-fully-replicated": "holds"}
    expected_liveness_why = {
        "write-resolves": "KIP-966 by design, as for hw-advances: a record appended while the ISR had "
                          "min.insync.replicas members stays above the HW once the ISR shrinks below it and the "
                          "removed follower crashes, and its acks=all request waits for its timeout "
                          "(NOT_ENOUGH_REPLICAS answers only new appends). " + FAIRNESS,
        "hw-advances": "KIP-966 by design: the leader shrinks its ISR to itself (below min.insync.replicas) and the "
                       "removed follower then crashes; the HW may not advance while the ISR is below "
                       "min.insync.replicas, so a record appended before stays above the HW until a replica "
                       "returns. Fairness: weak fetch, apply_leader_and_isr, truncate_by_epoch, alter_isr (crashed "
                       "brokers need not restart)"}

    def hw_may_advance(self, s, l):
        """KIP-966: the HW advances only when the ISR has at least min.insync.replicas members."""
        return count_of(s.isr[l][i] for i in self.REPLICAS) >= self.min_isr
