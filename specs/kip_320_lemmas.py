"""Lemmas of the kip-320 model: the auxiliary invariants its k-induction proof of no-committed-loss needs.

    isrcheck prove --spec kip-320 --invariant no-committed-loss --replicas 3

proves no-committed-loss for every depth (at those bounds) from these lemmas, which it proves
along with it (see ``Kip320Lemmas.proofs``, the spec's ``proofs`` declaration). Each lemma is an invariant of the spec, documented
in Kafka terms, and kip-320 expects each to hold, so ``isrcheck gate`` checks them too.

Several lemmas talk about history that the state does not keep: a restarted broker forgets the
leader epoch it was on, so from the state alone the proof cannot tell a broker that restarted
from one that never left an old epoch, and induction starts from unreachable states that
mix the two. The model option ``proof_ghosts=1`` adds ghost fields that remember it (what a
broker last applied, when it last fetched or truncated, when it last started, the first leader
epoch that committed each offset; see model/kafka.py). They change no behaviour but split
states, so they are off at the default bounds; there the parts of the lemmas that need them are
left out (a lemma that is about history only is then vacuous). ``prove`` turns them on for this
proof, and ``isrcheck check --spec kip-320 --all --set proof_ghosts=1`` checks every lemma in
full with the exhaustive engine.
"""
import functools

from isrcheck.model.expr import all_of, any_of, count_of, max_of, min_of, where
from isrcheck.model.spec import invariant


def history_lemma(name):
    """Declare a lemma that is about the proof ghosts only: vacuous (true) while they are off."""
    def deco(fn):
        @functools.wraps(fn)
        def lemma(self, s):
            return fn(self, s) if self.proof_ghosts else True
        lemma.history_only = True
        return invariant(name)(lemma)
    return deco


class Kip320Lemmas:
    """The lemmas, as a mixin of specs.kip_320.Kip320, with the proof that uses them (``proofs``).

    A subclass of kip-320 inherits them, their expected verdicts and the proof, like any
    invariant. A version that changes the protocol (some break it on purpose: no-isr-fencing,
    acks-1) says ``dropped_invariants = LEMMAS``: kip-320's lemmas are not its lemmas, and the
    proof goes with them. Under the relaxed bounds of checker.symbolic.induction.prove the lemmas are about
    arbitrarily large epochs and record ids, except lemma-epoch-table, which re-establishes the one
    epoch bound the model's guards impose (its LeaderAndIsr table has max_epochs slots).
    """

    def same_entry(self, s, a, b, o):
        """Replicas a and b hold the same record with the same epoch at offset o."""
        return (s.log_record[a][o] == s.log_record[b][o]) & (s.log_epoch[a][o] == s.log_epoch[b][o])

    def holds_record(self, s, r, o, record):
        """Replica r's log holds ``record`` at offset o."""
        return (s.leo[r] > o) & (s.log_record[r][o] == record)

    def potential_hw(self, s, l):
        """What l's HW would rise to now (Partition.maybeIncrementLeaderHW): the smallest LEO it knows in its ISR."""
        return min_of([where(s.isr[l][i], s.leo[l] if i == l else s.remote_leo[l][i], self.L) for i in self.REPLICAS])

    @invariant("lemma-down-forgets")
    def lemma_down_forgets(self, s):
        """A stopped broker holds no in-memory state; a replica with a leader is up and on some epoch."""
        ok = []
        for r in self.REPLICAS:
            down = ~s.up[r]
            ok.append(~down | ((s.leader[r] == self.NONE) & (s.leader_epoch[r] == 0) & ~s.zk_version_current[r]
                               & ~s.truncating[r]))
            for i in self.REPLICAS:
                ok.append(~down | (~s.isr[r][i] & (s.remote_leo[r][i] == -1)))
            ok.append((s.leader[r] == self.NONE) | (s.leader_epoch[r] >= 1))
            ok.append(~s.truncating[r] | ((s.leader[r] != self.NONE) & (s.leader[r] != r)))
            ok.append((s.leader[r] == r) | all_of(s.remote_leo[r][i] == -1 for i in self.REPLICAS))
            ok.append(s.remote_leo[r][r] == -1)
        return all_of(ok)

    @invariant("lemma-epoch-cache")
    def lemma_epoch_cache(self, s):
        """The leader-epoch cache: its entries increase in start offset and, below the LEO, are on records of their epochs; every record's epoch has an entry, at or before it unless KAFKA-10706 moved it, and the last record's epoch one below the LEO; what makeLeader wrote (2.0.1+): a leader's epoch start offset is within its log and only its own epoch's records follow it; the cache entry at the LEO is for an epoch the replica led, above every record's epoch.

        A leader's log only grows in its epoch, so its epoch start offset never passes a record of an
        older epoch (it is at least the first offset of its epoch); the entry at the LEO is its
        current epoch until it writes, and stays, above every record, until anything is appended or
        truncated. Log.append assigns each record's epoch (LeaderEpochFileCache.assign, 2.0.1+), so
        OffsetsForLeaderEpoch and the follower's own endOffsetFor see every epoch of its log: the
        truncation (AbstractFetcherThread.getOffsetTruncationState, 2.1) never falls back to the HW
        while the follower holds records. That every record's epoch keeps an entry is checked at the
        default bounds (and at 2 replicas with log_size=3, max_records=3, max_epochs=4); 2.0.1-2.6.0
        may lose it in longer logs (assign's conflict removal next to KAFKA-10706's kept entry, then a
        truncation; see model/kafka.py), and a proof that assumes it holds only where it does.
        """
        ok = []
        for r in self.REPLICAS:
            leads = self.believes_leads(s, r)
            # the epoch of the cache entry at the LEO (0: none); below the LEO each entry is on a record of its
            # epoch (not always its first record: before KAFKA-10706's fix an append of an earlier epoch than the
            # entry at the LEO removes that epoch's older entry too)
            cached = max_of([0] + [where(s.epoch_cache[r][e - 1] == s.leo[r], e, 0) for e in self.EPOCHS])
            for e in self.EPOCHS:
                start = s.epoch_cache[r][e - 1]
                ok.append(start <= s.leo[r])
                for later in range(e + 1, self.E + 1):      # entries increase in start offset (truncateAndAppend)
                    other = s.epoch_cache[r][later - 1]
                    ok.append((start < 0) | (other < 0) | (start < other))
                for o in self.OFFSETS:
                    ok.append(~((start == o) & (o < s.leo[r])) | (s.log_epoch[r][o] == e))
            ok.append(leads | (s.epoch_start[r] == 0))
            ok.append(s.up[r] | (cached == 0))
            ok.append(~leads | (s.epoch_start[r] <= s.leo[r]))
            ok.append(~leads | (cached == s.leader_epoch[r])
                      | ((cached == 0) & (self.latest_epoch(s, r) == s.leader_epoch[r])))
            ok.append((cached == 0) | (cached <= s.leader_epoch[r]))
            ok.append((cached == 0) | any_of((cached == e) & (s.req_leader[e - 1] == r) for e in self.EPOCHS))
            if self.proof_ghosts:
                ok.append(cached <= s.applied_epoch[r])
            # the epoch of its last record has an entry below the LEO (Log.append assigned it), so a follower asks
            # OffsetsForLeaderEpoch for at least that epoch and never falls back to its HW while it holds records
            # (only 2.0.1-2.6.0's conflict removal and a later truncation, KAFKA-10706, might leave a record
            # without an entry; not within the bounds checked, see the docstring)
            last = self.latest_epoch(s, r)
            below = max_of([0] + [where((s.epoch_cache[r][e - 1] >= 0) & (s.epoch_cache[r][e - 1] < s.leo[r]), e, 0)
                                  for e in self.EPOCHS])
            ok.append(below >= last)
            for o in self.OFFSETS:
                inside = o < s.leo[r]
                ok.append(~(leads & inside & (o >= s.epoch_start[r])) | (s.log_epoch[r][o] == s.leader_epoch[r]))
                for e in self.EPOCHS:
                    entry = s.epoch_cache[r][e - 1]
                    has_e = inside & (s.log_epoch[r][o] == e)
                    # every record's epoch has an entry (the same caveat)
                    ok.append(~has_e | (entry >= 0))
                    # an entry starts after a record of its epoch only once a fetch in a later epoch appended more
                    # records of it next to the entry makeLeader of a later epoch it led put at the LEO: assign's
                    # conflict removal moves the epoch's entry there (2.0.1-2.6.0, KAFKA-10706's kept entry)
                    moved = any_of((s.req_leader[x - 1] == r) & (s.fetched_epoch[r] > x) if self.proof_ghosts
                                   else (s.req_leader[x - 1] == r) for x in range(e + 1, self.E + 1))
                    ok.append(~(has_e & (entry > o)) | moved)
                ok.append(~(inside & (cached != 0)) | (s.log_epoch[r][o] < cached))
                # records of that epoch, anywhere, are past its LEO: it has written none since it took the epoch
                for x in self.REPLICAS:
                    theirs = (cached != 0) & (o < s.leo[x]) & (s.log_epoch[x][o] == cached)
                    ok.append(~theirs | (o >= s.leo[r]))
        return all_of(ok)

    @invariant("lemma-log-shape")
    def lemma_log_shape(self, s):
        """Every log is a gap-free prefix: records and epochs below the LEO, zeros past it, epochs non-decreasing, both HWs within it; so are the offsets exposed to consumers."""
        ok = []
        for r in self.REPLICAS:
            ok.append(s.hw[r] <= s.leo[r])
            ok.append(s.checkpoint_hw[r] <= s.leo[r])     # truncation never reaches the committed part
            for o in self.OFFSETS:
                inside = o < s.leo[r]
                ok.append(~inside | ((s.log_record[r][o] >= 1) & (s.log_epoch[r][o] >= 1)
                                     & (s.log_record[r][o] < s.next_record)
                                     & (s.log_epoch[r][o] <= s.q_epoch)))
                ok.append(inside | ((s.log_record[r][o] == 0) & (s.log_epoch[r][o] == 0)))
                if o + 1 < self.L:
                    ok.append(~(o + 1 < s.leo[r]) | (s.log_epoch[r][o] <= s.log_epoch[r][o + 1]))
        for o in self.OFFSETS:
            ok.append(s.exposed[o] < s.next_record)
            if o + 1 < self.L:
                ok.append((s.exposed[o + 1] == 0) | (s.exposed[o] != 0))
        return all_of(ok)

    @invariant("lemma-epochs")
    def lemma_epochs(self, s):
        """No broker is ahead of the quorum's leader epoch; exactly the requests of epochs 1..q_epoch exist."""
        ok = []
        for r in self.REPLICAS:
            ok.append(s.leader_epoch[r] <= s.q_epoch)
        for e in self.EPOCHS:
            ok.append(s.req_sent[e - 1] == (s.q_epoch >= e))
            ok.append(s.req_sent[e - 1] | (s.req_leader[e - 1] == self.NONE))
            # the current epoch's request always carries the current zkVersion (the controller resends it)
            ok.append(s.req_zk_version_current[e - 1] == (s.q_epoch == e))
            ok.append(~(s.q_epoch == e) | (s.req_leader[e - 1] == s.q_leader))
            for i in self.REPLICAS:
                ok.append(~(s.q_epoch == e) | (s.req_isr[e - 1][i] == s.q_isr[i]))
            for i in self.REPLICAS:
                ok.append(~s.req_zk_version_current[e - 1] | (s.req_isr[e - 1][i] == s.q_isr[i]))
        return all_of(ok)

    @invariant("lemma-zk-current")
    def lemma_zk_current(self, s):
        """A broker whose cached zkVersion is current is on the quorum's epoch and leader and sees its ISR."""
        ok = []
        for r in self.REPLICAS:
            z = s.zk_version_current[r]
            ok.append(~z | (s.up[r] & (s.leader_epoch[r] == s.q_epoch) & (s.leader[r] == s.q_leader)))
            for i in self.REPLICAS:
                ok.append(~z | (s.isr[r][i] == s.q_isr[i]))
        return all_of(ok)

    @invariant("lemma-leader-from-request")
    def lemma_leader_from_request(self, s):
        """A broker's believed leader is the one named by the LeaderAndIsr of its epoch."""
        ok = []
        for r in self.REPLICAS:
            for e in self.EPOCHS:
                has_leader = (s.leader_epoch[r] == e) & (s.leader[r] != self.NONE)
                ok.append(~has_leader | (s.req_leader[e - 1] == s.leader[r]))
        return all_of(ok)

    @invariant("lemma-acked-in-isr")
    def lemma_acked_in_isr(self, s):
        """Every acknowledged record, and every record exposed to consumers, is at its offset in the log of every ISR member (in ZooKeeper).

        An acknowledged record was exposed when the HW passed it; the members of the ISR were in
        the ISR of the first leader that committed it, or joined a later one's.
        """
        ok = []
        for m in self.RECORDS:
            at = s.acked_at[m - 1]
            ok.append((at < 0) | (m < s.next_record))
            ok.append((at < 0) | (s.exposed[at] == m))      # acknowledged when the HW passed it, which exposes it
            for i in self.REPLICAS:
                ok.append(~s.q_isr[i] | (at < 0) | self.holds_record(s, i, at, m))
        for o in self.OFFSETS:
            for i in self.REPLICAS:
                exposed_to_i = s.q_isr[i] & (s.exposed[o] != 0)
                ok.append(~exposed_to_i | self.holds_record(s, i, o, s.exposed[o]))
                if self.proof_ghosts:
                    # it was in the ISR of the first leader that committed it, or joined a later leader's
                    ok.append(~exposed_to_i | (s.applied_epoch[i] >= s.exposed_epoch[o]))
        return all_of(ok)

    @invariant("lemma-hw-exposed")
    def lemma_hw_exposed(self, s):
        """Below its HW, and below its checkpointed HW, every replica holds the records exposed to consumers there.

        A leader exposes what its HW passes; a follower takes its HW from a leader whose log it copied;
        a restart reloads the HW from the checkpoint.
        """
        ok = []
        for r in self.REPLICAS:
            for o in self.OFFSETS:
                below = (o < s.leo[r]) & ((o < s.hw[r]) | (o < s.checkpoint_hw[r]))
                ok.append(~below | (s.log_record[r][o] == s.exposed[o]))
                if self.proof_ghosts:
                    # ... learnt from a leader of an epoch it has applied, whose HW passed it then
                    ok.append(~below | (s.exposed_epoch[o] <= s.applied_epoch[r]))
        return all_of(ok)

    @history_lemma("lemma-exposed-on-later-leaders")
    def lemma_exposed_on_later_leaders(self, s):
        """A record exposed to consumers stays at its offset in the log of the leader of the first epoch that committed it, and of every later one, until that leader itself fetches or truncates.

        That leader's HW passed it, so its whole ISR held it; the controller elects from the ISR
        and a leader never truncates. (With lemma-acked-in-isr this is no-committed-loss.)
        """
        ok = []
        for o in self.OFFSETS:
            x, when = s.exposed[o], s.exposed_epoch[o]
            ok.append((x == 0) == (when == 0))
            ok.append(when <= s.q_epoch)
            for e in self.EPOCHS:     # committed by the leader of that epoch, after it applied it
                ok.append(~(when == e) | any_of((s.req_leader[e - 1] == l) & (s.applied_epoch[l] >= e)
                                                for l in self.REPLICAS))
            for e in self.EPOCHS:
                for l in self.REPLICAS:
                    cond = (x != 0) & (e >= when) & (s.req_leader[e - 1] == l) & (s.followed_epoch[l] < e)
                    ok.append(~cond | self.holds_record(s, l, o, x))
        return all_of(ok)

    @invariant("lemma-potential-hw-safe")
    def lemma_potential_hw_safe(self, s):
        """Whatever a replica that believes it leads could commit now, or in the next epochs it leads without a break, is already on every ISR member (in ZooKeeper), and on the leader of every later epoch.

        Below the HW it could raise to (the smallest LEO it knows in its own ISR view),
        every member of the ZooKeeper ISR holds the same records as it, and so does the
        leader of each later epoch until it fetches or truncates in a later epoch still
        (it came from this leader's ISR, or joined a later leader that had them). The same
        holds for the ISR of each LeaderAndIsr that names it leader of its next epochs:
        Partition.makeLeader keeps the followers' fetch offsets into them.
        """
        ok = []
        for l in self.REPLICAS:
            for chain, phw in self.potential_hws(s, l):
                for i in self.REPLICAS:
                    if i == l:
                        continue
                    for o in self.OFFSETS:
                        cond = chain & self.believes_leads(s, l) & (o < phw) & (o < s.leo[l])
                        holds = self.holds_record(s, i, o, s.log_record[l][o])
                        ok.append(~(cond & s.q_isr[i]) | holds)
                        if self.proof_ghosts:
                            for e in self.EPOCHS:
                                later = (e > s.leader_epoch[l]) & (s.req_leader[e - 1] == i) & (s.followed_epoch[i] < e)
                                ok.append(~(cond & later) | holds)
        return all_of(ok)

    def potential_hws(self, s, l):
        """(where, potential HW) of l: over its ISR view now, and over the ISR of each later epoch e it will lead
        without a break (every LeaderAndIsr after its epoch up to e names it), with the fetch offsets it keeps."""
        out = [(True, self.potential_hw(s, l))]
        for e in self.EPOCHS:
            chain = (e > s.leader_epoch[l]) & all_of(
                (x <= s.leader_epoch[l]) | (x > e) | (s.req_sent[x - 1] & (s.req_leader[x - 1] == l)) for x in self.EPOCHS)
            out.append((chain, min_of([where(s.req_isr[e - 1][i], s.leo[l] if i == l else s.remote_leo[l][i], self.L)
                                       for i in self.REPLICAS])))
        return out

    @history_lemma("lemma-follower-prefix")
    def lemma_follower_prefix(self, s):
        """A follower that finished truncating holds a prefix of its leader's log, until that leader itself fetches or truncates in a later epoch."""
        ok = []
        for f in self.REPLICAS:
            for l in self.REPLICAS:
                if f == l:
                    continue
                cond = (s.up[f] & (s.leader[f] == l) & ~s.truncating[f]
                        & (s.followed_epoch[l] < s.leader_epoch[f]))
                ok.append(~cond | (s.leo[f] <= s.leo[l]))
                for o in self.OFFSETS:
                    ok.append(~(cond & (o < s.leo[f])) | self.same_entry(s, f, l, o))
        return all_of(ok)

    @history_lemma("lemma-fetched-prefix")
    def lemma_fetched_prefix(self, s):
        """A broker whose last fetch was in epoch e holds, up to epoch e, a prefix of e's leader's log, until that leader fetches from someone else.

        Since that fetch it has at most truncated, and appended as leader of a later epoch; what
        the leader truncated since is past its LEO or was replaced by records of a later epoch.
        """
        ok = []
        for f in self.REPLICAS:
            e = s.fetched_epoch[f]
            ok.append(e <= s.followed_epoch[f])
            for l in self.REPLICAS:
                if l == f:
                    continue
                from_l = any_of((e == x) & (s.req_leader[x - 1] == l) for x in self.EPOCHS)
                kept = from_l & (s.followed_epoch[l] < e)          # l has only appended since
                shortened = from_l & (s.fetched_epoch[l] < e)      # l has at most truncated since
                for o in self.OFFSETS:
                    mine = (o < s.leo[f]) & (s.log_epoch[f][o] <= e)
                    # while l has only appended, every one of those records is still in its log, unchanged
                    ok.append(~(kept & mine) | ((o < s.leo[l]) & self.same_entry(s, f, l, o)))
                    still_there = (o < s.leo[l]) & (s.log_epoch[l][o] <= e)
                    ok.append(~(shortened & mine & still_there) | self.same_entry(s, f, l, o))
        return all_of(ok)

    @invariant("lemma-remote-leo")
    def lemma_remote_leo(self, s):
        """A leader's record of a follower's fetch offset is within both logs, which agree below it until the follower follows someone else.

        A fetch response carries the leader's whole log from the fetch offset on, so until the
        follower applies a LeaderAndIsr past the leader's epoch its log is a prefix of the leader's; after it
        became leader of a later epoch, the part below that fetch offset is still the leader's.
        """
        ok = []
        for l in self.REPLICAS:
            if self.proof_ghosts:       # l has led every epoch since led_since, without a break
                leads, since = self.believes_leads(s, l), s.led_since[l]
                ok.append(leads | (since == 0))
                ok.append(~leads | ((since >= 1) & (since <= s.leader_epoch[l])))
                ok.append(~leads | all_of((e < since) | (e > s.leader_epoch[l]) | (s.req_leader[e - 1] == l)
                                          for e in self.EPOCHS))
            for i in self.REPLICAS:
                if i == l:
                    continue
                x = s.remote_leo[l][i]
                known = x >= 0
                ok.append(~known | (x <= s.leo[l]))
                if not self.proof_ghosts:
                    continue
                # it fetched as l's follower, in an epoch l has led since without a break (Partition.makeLeader
                # keeps the followers' fetch offsets when the leader stays leader into the next epoch)
                ok.append(~known | (s.followed_epoch[i] >= s.led_since[l]))
                not_followed = known & (s.followed_epoch[i] <= s.leader_epoch[l])
                # every LeaderAndIsr it applied since it last fetched named l (it has not followed anyone else)
                still_on_it = known & (s.followed_epoch[i] <= s.leader_epoch[l]) & all_of(
                    (e <= s.followed_epoch[i]) | (e > s.applied_epoch[i]) | (s.req_leader[e - 1] == l) for e in self.EPOCHS)
                ok.append(~not_followed | (x <= s.leo[i]))
                ok.append(~still_on_it | (s.leo[i] <= s.leo[l]))
                for o in self.OFFSETS:
                    shared = (not_followed & (o < x)) | (still_on_it & (o < s.leo[i]))
                    ok.append(~shared | self.same_entry(s, i, l, o))
        return all_of(ok)

    @history_lemma("lemma-history")
    def lemma_history(self, s):
        """What a broker last applied (its epoch, unless a restart reset it) bounds its log's epochs and is never past the quorum's.

        A restart puts the broker one epoch behind the quorum's, which may be past or one behind
        what it applied; a broker with a leader is on the epoch it applied, at least the quorum's
        when it last started. It fetched and truncated only in epochs it applied, led by another
        broker that had applied them too, and finishes truncating before its first fetch of an epoch.
        Records of an epoch it did not lead came with a fetch in that epoch or later.
        """
        ok = []
        for r in self.REPLICAS:
            a = s.applied_epoch[r]
            ok.append(a <= s.q_epoch)
            ok.append((s.leader[r] == self.NONE) | (s.leader_epoch[r] == a))
            ok.append(~s.up[r] | (s.leader_epoch[r] + 1 >= a))
            # since it last started it is on the epoch before the quorum's then, or on one it applied since
            ok.append(s.up_since[r] <= s.q_epoch)
            ok.append(~s.up[r] | (s.leader_epoch[r] + 1 >= s.up_since[r]))
            ok.append(~s.up[r] | (s.leader_epoch[r] == a) | (s.leader_epoch[r] + 1 == s.up_since[r]))
            ok.append(~s.up[r] | (s.leader[r] == self.NONE) | (s.leader_epoch[r] >= s.up_since[r]))
            if not self.elr:
                # ZooKeeper mode applies no leaderless LeaderAndIsr: without a leader it has applied nothing since it
                # (re)started
                ok.append(~s.up[r] | (s.leader[r] != self.NONE) | (a == 0)
                          | ((s.leader_epoch[r] + 1 == s.up_since[r]) & (a <= s.up_since[r])))
            ok.append(s.followed_epoch[r] <= a)
            # a follower that finished truncating did so against its leader, on the same epoch
            for l in self.REPLICAS:
                if l != r:
                    done = s.up[r] & (s.leader[r] == l) & ~s.truncating[r]
                    ok.append(~done | (s.applied_epoch[l] >= s.leader_epoch[r]))
            # a follower truncates before its first fetch in its epoch, and again only after a restart in it
            ok.append(~s.truncating[r] | (s.fetched_epoch[r] < s.leader_epoch[r])
                      | (s.up_since[r] == s.leader_epoch[r]))
            for e in self.EPOCHS:
                other_leader = (s.req_leader[e - 1] != r) & (s.req_leader[e - 1] != self.NONE)
                # ... which it fetched from or truncated against while that leader led it
                other_leader = other_leader & all_of((s.req_leader[e - 1] != l) | (s.applied_epoch[l] >= e)
                                                     for l in self.REPLICAS if l != r)
                ok.append(~(s.followed_epoch[r] == e) | other_leader)
                ok.append(~(s.fetched_epoch[r] == e) | other_leader)
            for o in self.OFFSETS:
                ok.append(~(o < s.leo[r]) | (s.log_epoch[r][o] <= a))
                # a record of an epoch it did not lead came with a fetch in that epoch or later
                for e in self.EPOCHS:
                    foreign = (o < s.leo[r]) & (s.log_epoch[r][o] == e) & (s.req_leader[e - 1] != r)
                    ok.append(~foreign | (s.fetched_epoch[r] >= e))
        return all_of(ok)

    @invariant("lemma-epoch-prefix")
    def lemma_epoch_prefix(self, s):
        """Two logs holding records of the same leader epoch agree up to the earlier of them.

        Both prefixes were the epoch's leader's log while it appended in that epoch (log-matching
        across offsets: the leader's log only grows within its epoch).
        """
        ok = []
        for a in self.REPLICAS:
            for b in self.REPLICAS:
                if a == b:
                    continue
                for oa in self.OFFSETS:
                    for ob in self.OFFSETS:
                        if ob < oa:
                            continue
                        same = (oa < s.leo[a]) & (ob < s.leo[b]) & (s.log_epoch[a][oa] == s.log_epoch[b][ob])
                        ok.append(~same | all_of(self.same_entry(s, a, b, p) for p in range(oa + 1)))
        return all_of(ok)

    @invariant("lemma-records-unique")
    def lemma_records_unique(self, s):
        """A record id is produced once: wherever it is stored it sits at the same offset with the same epoch."""
        ok = []
        cells = [(r, o) for r in self.REPLICAS for o in self.OFFSETS]
        for x, (r1, o1) in enumerate(cells):
            for (r2, o2) in cells[x + 1:]:
                same = (s.log_record[r1][o1] == s.log_record[r2][o2]) & (s.log_record[r1][o1] != 0)
                if o1 != o2:
                    ok.append(~same)
                else:
                    ok.append(~same | (s.log_epoch[r1][o1] == s.log_epoch[r2][o2]))
        return all_of(ok)

    @invariant("lemma-epoch-table")
    def lemma_epoch_table(self, s):
        """The quorum's leader epoch stays within the model's LeaderAndIsr table (the controller bumps it only below max_epochs)."""
        return s.q_epoch <= self.E

    @history_lemma("lemma-epoch-leader-has-its-records")
    def lemma_epoch_leader_has_its_records(self, s):
        """Records of leader epoch e were appended by e's leader: until it fetches or truncates in a later epoch, it holds every one of them."""
        ok = []
        for e in self.EPOCHS:
            for l in self.REPLICAS:
                kept = (s.req_leader[e - 1] == l) & (s.followed_epoch[l] < e)
                for r in self.REPLICAS:
                    if r == l:
                        continue
                    for o in self.OFFSETS:
                        has_e = (o < s.leo[r]) & (s.log_epoch[r][o] == e)
                        ok.append(~(kept & has_e) | ((s.leo[l] > o) & self.same_entry(s, r, l, o)))
        return all_of(ok)

    @invariant("lemma-leader-isr-is-its-request")
    def lemma_leader_isr_is_its_request(self, s):
        """A replica that believes it leads in epoch e sees the ISR recorded for epoch e (its own successful writes update both)."""
        ok = []
        for l in self.REPLICAS:
            for e in self.EPOCHS:
                cond = self.believes_leads(s, l) & (s.leader_epoch[l] == e)
                for i in self.REPLICAS:
                    ok.append(~cond | (s.isr[l][i] == s.req_isr[e - 1][i]))
        return all_of(ok)

    @invariant("lemma-next-leader-from-previous-isr")
    def lemma_next_leader_from_previous_isr(self, s):
        """Each epoch's leader was a member of the previous epoch's final ISR (clean election, or the same leader)."""
        ok = []
        for e in self.EPOCHS:
            if e + 1 > self.E:
                continue
            for i in self.REPLICAS:
                ok.append(~(s.req_sent[e] & (s.req_leader[e] == i)) | s.req_isr[e - 1][i])
        return all_of(ok)

    @invariant("lemma-offline-leader-failed")
    def lemma_offline_leader_failed(self, s):
        """An epoch went offline only because its predecessor's leader was down; if it is up again, it restarted after that.

        A restarted broker resumes at least at the epoch before the quorum's, so it can
        never again act as leader of the epoch it lost.
        """
        ok = []
        for e in self.EPOCHS:
            if e + 1 > self.E:
                continue
            offline = s.req_sent[e] & (s.req_leader[e] == self.NONE)
            for l in self.REPLICAS:
                cond = offline & (s.req_leader[e - 1] == l) & s.up[l]
                ok.append(~cond | ((s.leader_epoch[l] >= e) & ~((s.leader_epoch[l] == e) & (s.leader[l] == l))))
        return all_of(ok)

    @invariant("lemma-down-means-crashed")
    def lemma_down_means_crashed(self, s):
        """Every broker that is down, and every restart, follows one of the counted crashes or shutdowns."""
        stops = count_of(~s.up[r] for r in self.REPLICAS)
        if self.proof_ghosts:
            stops = stops + count_of(s.up_since[r] > 0 for r in self.REPLICAS)
        return stops <= s.crashes

    @history_lemma("lemma-isr-grows-only-under-its-leader")
    def lemma_isr_grows_only_under_its_leader(self, s):
        """Until the next epoch's leader has applied it, that epoch's ISR is this epoch's final ISR less members that were down.

        The controller only ever shrinks the ISR it hands over (clean election keeps the live
        part, ISR shrink and going offline drop a dead member); only the new epoch's leader can
        change it, after applying e + 1, and it adds only followers that fetched from it.
        """
        ok = []
        for e in self.EPOCHS:
            if e + 1 > self.E:
                continue
            for l in self.REPLICAS:
                cond = s.req_sent[e] & (s.req_leader[e] == l) & (s.applied_epoch[l] <= e)
                for i in self.REPLICAS:
                    ok.append(~(cond & s.req_isr[e][i]) | s.req_isr[e - 1][i])
                    # ... and every member that was up when the controller handed it over is still in it
                    up_then = s.up[i] & (s.up_since[i] <= e)
                    ok.append(~(cond & s.req_isr[e - 1][i] & up_then) | s.req_isr[e][i])
                    # a member the leader of e + 1 added joined with a fetch in e + 1
                    added = s.req_sent[e] & s.req_isr[e][i] & ~s.req_isr[e - 1][i] & (s.req_leader[e] != i)
                    ok.append(~added | (s.fetched_epoch[i] >= e + 1))
        return all_of(ok)


#: the lemmas, in declaration order
LEMMAS = tuple(fn.__isrcheck_invariant__ for fn in vars(Kip320Lemmas).values()
               if hasattr(fn, "__isrcheck_invariant__"))

#: why kip-320 expects each lemma to hold (for its expected_why)
LEMMAS_WHY = {fn.__isrcheck_invariant__: "lemma of the no-committed-loss proof (isrcheck prove)"
              + (": about history only, vacuous unless --set proof_ghosts=1" if hasattr(fn, "history_only") else "")
              for fn in vars(Kip320Lemmas).values() if hasattr(fn, "__isrcheck_invariant__")}

#: what `isrcheck prove` assumes and proves along with an invariant when no --lemma is given, and the
#: model options it turns on for it
Kip320Lemmas.proofs = {"no-committed-loss": {
    "lemmas": LEMMAS + ("leader-in-isr", "log-matching"),
    "settings": {"proof_ghosts": 1},
}}
