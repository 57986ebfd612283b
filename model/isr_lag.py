"""The properties of an ISR lag rule (``KafkaReplication.lag_rule``): who leaves the ISR, and who stays.

A version that declares its lag rule mixes ``IsrLagProperties`` in ahead of its Kafka model class::

    class Kafka082(IsrLagProperties, HwTruncation):
        lag_rule = "message"

The rule itself (the leader's clocks, ``lag_expires``, ``catch_up_lapses``, ``fetcher_stops``) is in
model/kafka.py; versions without a lag rule have neither the fields these properties read nor the properties.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of
from isrcheck.model.spec import invariant, leads_to, weak


class IsrLagProperties:
    """isr-keeps-healthy-followers (an invariant) and isr-drops-stuck-followers (liveness)."""

    @invariant("isr-keeps-healthy-followers")
    def isr_keeps_healthy_followers(self, s):
        """A follower that keeps fetching, each fetch to the leader's log end, is never removed from the ISR.

        When it breaks, the leader drops a follower that keeps up with it: the ISR flaps, and with
        min.insync.replicas the partition refuses acks=all writes while it is short.
        """
        # healthy (the ghost): in the leader's ISR when it took over, or an ISR member that fetched from its log end
        # since; and no replica.lag.time.max.ms without a fetch since (``lag_expires``). A burst of appends may leave
        # it records behind for a moment.
        return all_of(~s.healthy[l][f] | s.isr[l][f] for l in self.REPLICAS for f in self.REPLICAS if f != l)

    @leads_to("isr-drops-stuck-followers", fairness=[weak("lag_expires"), weak("shrink_isr")])
    def isr_drops_stuck_followers(self, s):
        """A live follower whose fetcher has stopped is eventually out of the acting leader's ISR.

        Fairness: time passes (replica.lag.time.max.ms eventually elapses for a follower that does not fetch) and the
        leader's periodic ISR check (ReplicaManager's "isr-expiration" task) eventually drops a follower its lag rule
        calls out of sync (each instance weakly fair). The controller need not act: the follower's ZooKeeper session
        lives on. The obligation ends when the leader stops acting or the follower's broker stops. Stated for the last
        replica as the follower (replicas are interchangeable in the model, as isr-regrows assumes).
        """
        f = self.R - 1
        stuck = any_of(self.acting_leader(s, l) & s.isr[l][f] & s.up[f] & s.stalled[f] for l in self.REPLICAS if l != f)
        return stuck, ~stuck
