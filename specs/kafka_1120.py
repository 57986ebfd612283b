"""KAFKA-1120 (fixed in Kafka 2.2 by KIP-380): a fast bounce the controller misses leaves the partition leaderless."""
from isrcheck.model.layout import Field
from isrcheck.model.spec import action
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS


class Kafka1120(Kip320):
    name = "kafka-1120"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1 without KIP-380's broker epoch: a broker can bounce before the controller processes "
               "its BrokerChange, so onBrokerStartup never runs and the restarted broker gets no LeaderAndIsr; "
               "a leader bounced that way no longer knows it leads, and nothing makes the controller elect again.")
    references = ("KAFKA-1120 (controller could miss a broker state change)",
                  "KIP-380 (Kafka 2.2: bounced brokers detected by broker epoch; its assumption 4)")
    expected_liveness = {"eventually-leader": "violated", "isr-regrows": "violated",
                         "truncation-terminates": "violated", "hw-advances": "violated"}
    expected_liveness_why = {
        "eventually-leader": "KAFKA-1120: the leader, alone in the ISR, bounces unnoticed and comes back without "
                             "the LeaderAndIsr of the current epoch; the controller still has it as leader and "
                             "elects nobody (the other replica is outside the ISR): every broker is up and no "
                             "replica ever acts as leader. Fairness: weak elect_leader, apply_leader_and_isr. "
                             "Holds on kip-320 at the same bounds, and KIP-380 (2.2) fixes it for good: the "
                             "controller sees the new broker epoch and handles the bounce as failure and startup",
        "isr-regrows": "KAFKA-1120: a follower bounces unnoticed; it never gets the LeaderAndIsr that names its "
                       "leader, so it never fetches and stays outside the ISR while up. Fairness: weak fetch, "
                       "apply_leader_and_isr, truncate_by_epoch. Holds on kip-320 at the same bounds",
        "truncation-terminates": "KAFKA-1120: a follower waits to truncate against a leader that bounced unnoticed "
                                 "and no longer leads; the controller elects nobody else (the follower is outside "
                                 "the ISR). Fairness: weak truncate_by_epoch, apply_leader_and_isr, elect_leader, "
                                 "restart. Holds on kip-320 at the same bounds",
        "hw-advances": "KAFKA-1120: an ISR follower bounces unnoticed and never fetches again, so the leader's HW "
                       "never passes its last record. Fairness: weak fetch, apply_leader_and_isr, truncate_by_epoch, alter_isr"}

    def fields(self):
        return super().fields() + [
            Field("down_at_epoch", 0, self.E, (self.R,), axes=("replica",),
                  doc="the quorum's leader epoch when the broker last stopped")]

    def go_down(self, s, r):
        super().go_down(s, r)
        s.down_at_epoch[r] = s.q_epoch

    @action(r="REPLICAS")
    def restart_unnoticed(self, s, r):
        """Broker r bounces faster than the controller handles its BrokerChange (before 2.2, KAFKA-1120).

        KafkaController's BrokerChange handler sees r in the old and the new broker lists and runs no
        onBrokerStartup: no LeaderAndIsr of the current epoch is resent, so r applies only later epochs.
        Only while the controller has not acted on the failure for this partition (the leader epoch is
        the one r went down in). KIP-380 (2.2) compares broker epochs and handles the bounce as a failure
        and a startup, which is what ``restart`` models.
        """
        s.require(s.q_epoch == s.down_at_epoch[r])
        self.restart(s, r)
        s.leader_epoch[r] = s.q_epoch
