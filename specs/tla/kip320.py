"""Kip320.tla: KIP-320, fetches and truncation fenced by the leader epoch."""
from isrcheck.model.expr import all_of, min_of
from isrcheck.model.spec import action
from isrcheck.specs.tla.kip279 import TlaKip279


class TlaKip320(TlaKip279):
    name = "tla-kip320"
    summary = ("Port of Kip320.tla (hachikuji/kafka-specification): followers truncate (as KIP-279) only "
               "against a leader on the request's epoch, fetch only on the leader's epoch, the HW advances "
               "only on ISR members following that epoch, and the ISR grows only with followers at the "
               "HW once the HW reached the current epoch. LeaderInIsr is kept as the TLA+ has it, so it "
               "is false in the initial state, where the quorum leader is None.")
    references = TlaKip279.references + ("Kip320.tla", "KIP-320")
    expected = {"type-ok": "holds", "weak-isr": "holds", "strong-isr": "holds", "leader-in-isr": "violated"}
    expected_why = {**TlaKip279.expected_why,
                    "weak-isr": "THEOREM Spec => []WeakIsr",
                    "strong-isr": "THEOREM Spec => []StrongIsr (tla-kip279, KIP-279 unfenced, violates it)"}

    # Kip320's Next replaces these with the fenced actions below.
    leader_shrink_isr = None
    leader_expand_isr = None
    leader_inc_high_watermark = None
    follower_replicate = None
    become_follower_truncate_kip279 = None

    def is_following_leader_epoch(self, s, leader, follower):
        """IsFollowingLeaderEpoch: the leader presumes leadership and the follower follows it on its epoch."""
        return (self.presumes_leadership(s, leader) & (s.leader[follower] == leader)
                & (s.leader_epoch[follower] == s.leader_epoch[leader]))

    def has_high_watermark_reached_current_epoch(self, s, leader):
        """HasHighWatermarkReachedCurrentEpoch: the leader's hw is its end offset, or the record at the hw
        is of the leader's current epoch."""
        hw = s.hw[leader]
        return ((hw == s.log_end_offset[leader])
                | (self.has_offset(s, leader, hw) & self.entry_is_log_record(s, leader, hw)
                   & (s.log_epoch[leader][hw] == s.leader_epoch[leader])))

    def has_follower_reached_high_watermark(self, s, leader, follower):
        """HasFollowerReachedHighWatermark: the leader's hw is 0, or the follower holds offset hw - 1."""
        hw = s.hw[leader]
        return (hw == 0) | ((hw > 0) & self.has_offset(s, follower, hw - 1))

    @action(f="REPLICAS", l="REPLICAS")
    def fenced_follower_fetch(self, s, f, l):
        """FencedFollowerFetch: a follower replicates the leader's next record only on the leader's epoch.

        Before fetching, the follower has truncated so that its log matches the
        leader's; its hw becomes Min({leader's hw, its new end offset}).
        """
        s.require(self.is_following_leader_epoch(s, l, f))
        s.require(self.replicate_to_guard(s, l, f))
        new_hw = min_of([s.hw[l], s.log_end_offset[f] + 1])
        self.replicate_to(s, l, f)
        s.hw[f] = new_hw

    @action(l="REPLICAS")
    def fenced_leader_inc_high_watermark(self, s, l):
        """FencedLeaderIncHighWatermark: the HW moves up one offset when the leader holds the offset at the HW
        and every member of its (local, not the quorum's) ISR follows its epoch and holds that offset."""
        hw = s.hw[l]
        s.require(self.has_offset(s, l, hw))
        s.require(all_of(~s.isr[l][f] | (self.is_following_leader_epoch(s, l, f) & self.has_offset(s, f, hw))
                         for f in self.REPLICAS))
        s.hw[l] = hw + 1

    @action(l="REPLICAS", f="REPLICAS")
    def fenced_leader_shrink_isr(self, s, l, f):
        """FencedLeaderShrinkIsr: the leader drops an ISR member (other than itself) that does not follow its
        epoch or whose end offset lags its own.

        The leader may do so at any time once either holds, even right after
        becoming leader; the quorum write fences zombie leaders.
        """
        s.require(f != l)
        s.require(s.isr[l][f] & (~self.is_following_leader_epoch(s, l, f)
                                 | (s.log_end_offset[f] < s.log_end_offset[l])))
        s.require(self.quorum_update_guard(s, l))
        self.quorum_update_leader_and_isr(s, l, [s.isr[l][i] & (i != f) for i in self.REPLICAS])

    @action(l="REPLICAS", f="REPLICAS")
    def fenced_leader_expand_isr(self, s, l, f):
        """FencedLeaderExpandIsr: the leader adds a follower on its epoch that has reached its HW, but only
        once the HW has reached the leader's current epoch.

        A new leader's HW typically lags the old leader's, and only the current ISR
        is known to hold everything up to it: a new member must first replicate all
        of the previous leader's records, i.e. up to the start of the leader's epoch.
        """
        s.require(~s.isr[l][f] & self.is_following_leader_epoch(s, l, f)
                  & self.has_follower_reached_high_watermark(s, l, f)
                  & self.has_high_watermark_reached_current_epoch(s, l))
        s.require(self.quorum_update_guard(s, l))
        self.quorum_update_leader_and_isr(s, l, [s.isr[l][i] | (i == f) for i in self.REPLICAS])

    @action(l="REPLICAS", r="REPLICAS", e="EPOCHS")
    def fenced_become_follower_and_truncate(self, s, l, r, e):
        """FencedBecomeFollowerAndTruncate: replica r applies the LeaderAndIsr request of epoch e naming leader l
        (another replica), newer than its own epoch, and truncates to FirstNonMatchingOffsetFromTail(l, r),
        but only while l presumes leadership on that same epoch e.

        Finding the truncation point against a leader on another epoch is unsafe:
        that leader's log may still change (it may truncate itself before catching up).
        The hw becomes Min({truncation offset, hw}).
        """
        s.require(l != r)
        truncation_offset = self.first_non_matching_offset_from_tail(s, l, r)
        s.require(self.request_exists(s, e) & (s.req_leader[e] == l) & (e > s.leader_epoch[r]))
        s.require(self.presumes_leadership(s, l) & (s.leader_epoch[l] == e))
        s.require(self.truncate_to_guard(s, r, truncation_offset))
        self.become_follower_and_truncate_to(s, l, r, e, truncation_offset)
