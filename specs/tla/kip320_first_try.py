"""Kip320FirstTry.tla: the first attempt at KIP-320, truncating on demand instead of on becoming follower."""
from isrcheck.model.expr import all_of, min_of
from isrcheck.model.spec import action
from isrcheck.specs.tla.kip279 import TlaKip279


class TlaKip320FirstTry(TlaKip279):
    name = "tla-kip320-first-try"
    summary = ("Port of Kip320FirstTry.tla (hachikuji/kafka-specification): followers do not truncate on "
               "becoming follower; they fetch while the epoch of their last record matches the leader's "
               "and truncate (as KIP-279) when it does not. The leader cannot tell that followers are on "
               "its epoch when it advances the HW or expands the ISR, so StrongIsr fails. LeaderInIsr is "
               "kept as the TLA+ has it, so it is false in the initial state, where the quorum leader is None.")
    references = TlaKip279.references + ("Kip320FirstTry.tla", "KIP-320")
    expected = {"type-ok": "holds", "weak-isr": "violated", "strong-isr": "violated",
                "leader-in-isr": "violated"}
    expected_why = {**TlaKip279.expected_why,
                    "strong-isr": ("the HW advances on a follower still on an older epoch, which later "
                                   "truncates committed data and can be elected (KIP-279's truncation with the "
                                   "first try at KIP-320's fencing)"),
                    "weak-isr": "the same, by a member of the leader's own ISR"}

    # Kip320FirstTry's Next replaces these with the actions below.
    leader_shrink_isr = None
    leader_expand_isr = None
    leader_inc_high_watermark = None
    follower_replicate = None
    become_follower_truncate_kip279 = None

    def is_follower_caught_up_to_leader_epoch(self, s, leader, follower, end_offset):
        """IsFollowerCaughtUpToLeaderEpoch: the leader presumes leadership, the follower follows it, and unless
        endOffset = 0 both hold offset endOffset - 1 with records of the same epoch there."""
        last = end_offset - 1
        return (self.presumes_leadership(s, leader) & self.is_following(s, follower, leader)
                & ((end_offset == 0)
                   | ((end_offset > 0) & self.has_offset(s, leader, last)
                      & self.entry_is_log_record(s, leader, last) & self.has_offset(s, follower, last)
                      & (s.log_epoch[follower][last] == s.log_epoch[leader][last]))))

    def follower_needs_truncation(self, s, follower, leader):
        """FollowerNeedsTruncation: the follower's end offset is past the leader's, or the epoch of its
        last record differs from the leader's record at that offset."""
        end = s.log_end_offset[follower]
        last = end - 1
        return ((end > s.log_end_offset[leader])
                | (~self.is_empty(s, follower) & self.entry_is_log_record(s, follower, last)
                   & self.has_offset(s, leader, last)
                   & (s.log_epoch[leader][last] != s.log_epoch[follower][last])))

    def has_high_watermark_reached_current_epoch(self, s, leader):
        """HasHighWatermarkReachedCurrentEpoch: the leader's hw is its end offset, or the record at the hw
        is of the leader's current epoch."""
        hw = s.hw[leader]
        return ((hw == s.log_end_offset[leader])
                | (self.has_offset(s, leader, hw) & self.entry_is_log_record(s, leader, hw)
                   & (s.log_epoch[leader][hw] == s.leader_epoch[leader])))

    @action(l="REPLICAS", f="REPLICAS")
    def follower_truncate(self, s, l, f):
        """FollowerTruncate: with KIP-320 a follower may truncate at any time, when the epoch of its last
        entry does not match the leader's entry at that offset (or it is ahead of the leader).

        It truncates to FirstNonMatchingOffsetFromTail(l, f) and lowers its hw to at most that offset.
        """
        truncation_offset = self.first_non_matching_offset_from_tail(s, l, f)
        s.require(self.presumes_leadership(s, l) & self.is_following(s, f, l)
                  & self.follower_needs_truncation(s, f, l))
        s.require(self.truncate_to_guard(s, f, truncation_offset))
        new_hw = min_of([truncation_offset, s.hw[f]])
        self.truncate_to(s, f, truncation_offset)
        s.hw[f] = new_hw

    @action(l="REPLICAS")
    def improved_leader_inc_high_watermark(self, s, l):
        """ImprovedLeaderIncHighWatermark: the presumed leader moves its HW past the record at the HW when
        every member of its ISR follows it and holds a record of the same epoch at that offset.

        The leader can verify that epoch when the follower fetches.
        """
        hw = s.hw[l]
        s.require(self.presumes_leadership(s, l) & self.has_offset(s, l, hw) & self.entry_is_log_record(s, l, hw))
        s.require(all_of(~s.isr[l][f] | self.is_follower_caught_up_to_leader_epoch(s, l, f, hw + 1)
                         for f in self.REPLICAS))
        s.hw[l] = hw + 1

    @action(f="REPLICAS", l="REPLICAS")
    def follower_fetch(self, s, f, l):
        """FollowerFetch: KIP-320 fetch with stronger fencing; the follower replicates the leader's next record
        only while the epoch at the end of its log matches the leader's.

        The follower's hw becomes Min({leader's hw, its new end offset}).
        """
        end = s.log_end_offset[f]
        s.require(self.is_follower_caught_up_to_leader_epoch(s, l, f, end))
        s.require(self.replicate_to_guard(s, l, f))
        new_hw = min_of([s.hw[l], end + 1])
        self.replicate_to(s, l, f)
        s.hw[f] = new_hw

    @action(l="REPLICAS", r="REPLICAS")
    def leader_shrink_isr_better_fencing(self, s, l, r):
        """LeaderShrinkIsrBetterFencing: the leader drops an ISR member (other than itself) that is not caught
        up to its end offset on the leader's epoch; the quorum write fences zombie leaders."""
        s.require(r != l)
        s.require(s.isr[l][r] & ~self.is_follower_caught_up_to_leader_epoch(s, l, r, s.log_end_offset[l]))
        s.require(self.quorum_update_guard(s, l))
        self.quorum_update_leader_and_isr(s, l, [s.isr[l][i] & (i != r) for i in self.REPLICAS])

    @action(l="REPLICAS", r="REPLICAS")
    def leader_expand_isr_better_fencing(self, s, l, r):
        """LeaderExpandIsrBetterFencing: the leader adds a replica caught up to its HW on the leader's epoch,
        but only once its HW has reached its current epoch.

        This carries the fix for ISR expansion after an election: no new member
        until it has caught up at least to the start of the current epoch.
        """
        s.require(~s.isr[l][r] & self.is_follower_caught_up_to_leader_epoch(s, l, r, s.hw[l])
                  & self.has_high_watermark_reached_current_epoch(s, l))
        s.require(self.quorum_update_guard(s, l))
        self.quorum_update_leader_and_isr(s, l, [s.isr[l][i] | (i == r) for i in self.REPLICAS])

    @action(l="REPLICAS", r="REPLICAS", e="EPOCHS")
    def become_follower(self, s, l, r, e):
        """BecomeFollower: replica r applies the LeaderAndIsr request of epoch e naming leader l (another
        replica), newer than its own epoch, without truncating.

        It starts fetching and relies on the truncation error to tell it when to
        truncate (FollowerTruncate). Its log and hw are unchanged.
        """
        s.require(l != r)
        s.require(self.request_exists(s, e) & (s.req_leader[e] == l) & (e > s.leader_epoch[r]))
        s.leader_epoch[r] = e
        s.leader[r] = l
        for i in self.REPLICAS:
            s.isr[r][i] = s.req_isr[e][i]
