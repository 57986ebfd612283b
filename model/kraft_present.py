"""The KRaft family's presentation: the Kafka presentation, with the KRaft-era steps said in Kafka terms.

``KRaftPresentation`` (``KRaftReplication.presentation_class``) narrates what model/kraft.py and
model/kraft_metadata.py add or re-read: the controller's partition records in the metadata log and each broker's
metadata listener applying them (makeLeader, makeFollower, and makeLeader run again on its own partition epoch),
broker sessions (fencing, unfencing, registering again, controlled shutdown), elections as PartitionChangeBuilder
makes them, AlterPartition handled by the controller and its answer read (or ignored) by the leader, fetches
answered with DivergingEpoch and the truncation that follows, partial and late fetch answers, the lag of a
follower, and a caught-up replica outside the ISR holding back the HW (shouldWaitForReplicaToJoinIsr). Everything
else reads as in model/kafka_present.py.
"""
from __future__ import annotations

from isrcheck.model.kafka_present import KafkaPresentation, _message, _S, _set
from isrcheck.model.present import Line

#: AlterPartition answers (``ap_resp``), as model/kraft_metadata.py numbers them
_ANSWERS = {1: "accepted", 2: "accepted with a new leader epoch", 3: "FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION",
            4: "INELIGIBLE_REPLICA"}


def _flag(state, name, *idx):
    return bool(state.get(name, *idx, default=False))


def _pending(state, l, R):
    return [i for i in range(R) if _flag(state, "pending_isr", l, i)]


def _who(R, r):
    return "no leader" if r is None or r >= R else f"r{r}"


def _held_back(cur, R):
    """Clauses for each leader whose HW waits for a caught-up replica outside its maximal ISR (KAFKA-15021)."""
    out = []
    for l in range(R):
        if not cur.believes_leads(l):
            continue
        hw, leo = cur.get("hw", l), cur.get("leo", l)
        for f in range(R):
            remote = cur.get("remote_leo", l, f)
            maximal = _flag(cur, "isr", l, f) or (_flag(cur, "alter_pending", l) and _flag(cur, "pending_isr", l, f))
            caught_up = _flag(cur, "caught_up", l, f) or remote == leo
            if (f != l and not maximal and caught_up and _flag(cur, "up", f) and remote is not None
                    and 0 <= remote == hw < leo):
                out.append(f"r{f} is caught up but not in the ISR, so r{l} keeps its HW at {hw} until r{f} has "
                           f"the records (shouldWaitForReplicaToJoinIsr, KAFKA-15021)")
    return out


def _ineligible(prev, l, R, spec):
    """Why the controller finds a member of l's proposed ISR ineligible (or None)."""
    for i in _pending(prev, l, R):
        if _flag(prev, "fenced", i):
            return f"r{i} is fenced"
        if _flag(prev, "shutting_down", i):
            return f"r{i} is in controlled shutdown (KIP-841)"
    if spec.checks_broker_epochs and not _flag(prev, "pending_epochs_current", l):
        added = [i for i in _pending(prev, l, R) if not _flag(prev, "isr", l, i)]
        who = ", ".join(f"r{i}" for i in added) or "a member"
        return f"the broker epoch it carries for {who} is stale ({who} registered again since its fetch; KIP-903)"
    return None


def _alter_outcome(prev, cur, l, R, spec):
    """(accepted, why) of leader l's AlterPartition, as ReplicationControlManager.alterPartition decides."""
    if not _flag(prev, "ap_epoch_current", l):
        return False, f"rejected, the leader epoch it carries is no longer the partition's (FENCED_LEADER_EPOCH)"
    if not _flag(prev, "ap_pe_current", l):
        return False, (f"rejected, the partition epoch it carries is no longer the partition's "
                       f"(INVALID_UPDATE_VERSION)")
    why = _ineligible(prev, l, R, spec)
    if why:
        return False, f"rejected, {why} (INELIGIBLE_REPLICA)"
    if not spec.checks_broker_epochs:
        added = [i for i in _pending(prev, l, R) if not _flag(prev, "isr", l, i)]
        stale = [i for i in added if not _flag(prev, "pending_epochs_current", l)]
        if stale:
            who = ", ".join(f"r{i}" for i in stale)
            return True, (f"accepted, although {who} registered again since the fetch the request was built from: "
                          f"no broker-epoch check (KAFKA-14617, fixed by KIP-903 in 3.5).")
    completed = _completion(prev, cur, R)
    if completed:
        answer = " (answered NEW_LEADER_ELECTED)" if cur.get("q_leader") != prev.get("q_leader") else ""
        return True, f"accepted{completed[:-1]}{answer}."
    if prev.isr() == cur.isr() and prev.get("q_epoch") == cur.get("q_epoch"):
        return True, f"accepted, nothing to change (the ISR already is {_set(cur.isr())})."
    epoch = "" if prev.get("q_epoch") == cur.get("q_epoch") else f", leader epoch {cur.get('q_epoch')} (3.5: a shrink bumps it)"
    return True, f"accepted: ISR {_set(cur.isr())}, the next partition epoch{epoch}."


def _record(state, k, R):
    """(leader, leader epoch, ISR) of the partition record ``k`` records before the controller's."""
    if k == 0:
        return state.get("q_leader"), state.get("q_epoch"), state.isr()
    return (state.get("mlog_leader", k - 1), state.get("mlog_epoch", k - 1),
            [i for i in range(R) if _flag(state, "mlog_isr", k - 1, i)])


def _election(prev, cur, R):
    """' — rX becomes leader (epoch E)' or ' — the partition has no leader' when the leader changed, else ''."""
    if prev.get("q_leader") == cur.get("q_leader"):
        return ""
    leader = cur.get("q_leader")
    if leader is None or leader >= R:
        return "; no valid leader is left: the partition has no leader"
    how = ""
    if _flag(prev, "q_elr", leader) and leader not in prev.isr():
        how = " from the ELR (no ISR member left: a clean election, KIP-966)"
    return f"; r{leader} becomes leader{how} for leader epoch {cur.get('q_epoch')}"


def _members(state, field, R):
    return [i for i in range(R) if _flag(state, field, i)]


def _completion(prev, cur, R):
    """The words for a record that completes a reassignment (model/kraft_reassignment.py), or nothing."""
    if prev.get("q_replicas", 0) is None or not (_members(prev, "q_adding", R) or _members(prev, "q_removing", R)):
        return ""
    if _members(cur, "q_adding", R) or _members(cur, "q_removing", R):
        return ""
    leader = _who(R, cur.get("q_leader"))
    return (f"; the ISR less the removing replicas holds the target: the reassignment completes, ISR "
            f"{_set(cur.isr())}, replicas "
            f"{_set(_members(cur, 'q_replicas', R))}, leader {leader}, leader epoch {cur.get('q_epoch')}.")


class KRaftPresentation(KafkaPresentation):
    """Traces of the KRaft model (see the module doc)."""

    narrated = (KafkaPresentation.narrated - {"truncate_by_epoch", "exit_out_of_range", "fetch_response_lost",
                                              "controller_failover", "apply_stale_leader_and_isr", "alter_isr",
                                              "restart_unnoticed", "apply_leader_and_isr", "controller_shrink_isr",
                                              "controller_offline", "shrink_isr", "start_reassignment",
                                              "resume_reassignment", "complete_reassignment", "apply_stop_replica"}
                | {"truncate_on_fetch_response", "lag_expires", "alter_partition", "alter_partition_response",
                   "alter_partition_response_lost", "apply_metadata", "fence_broker", "unfence_broker",
                   "controlled_shutdown", "elect_last_known_leader", "maybe_shrink_isr", "fetch_partial",
                   "image_registration", "fetch_response", "fetch_response_lost", "alter_partition_reassignments",
                   "alter_partition_elects"})
    #: steps whose sentence says the controller's new ISR itself
    isr_said = KafkaPresentation.isr_said | {"fence_broker", "unfence_broker", "controlled_shutdown",
                                             "alter_partition", "elect_last_known_leader", "restart",
                                             "alter_partition_reassignments", "alter_partition_elects"}

    def explain(self, trace, invariant=None):
        """As the Kafka family's, with the controller's state in the metadata log rather than ZooKeeper, and a
        replica joining the ISR without records explained by the AlterPartition that added it."""
        _, steps = self.steps(trace, invariant)
        out = []
        for line in super().explain(trace, invariant):
            text = line.text.replace("in ZooKeeper", "in the metadata log")
            if line.kind == "isr" and steps[line.step][0] == "alter_partition":
                text = self._join_reason(steps, line.step, text)
            out.append(Line(line.step, text, line.kind))
        return out

    def _join_reason(self, steps, i, text):
        """The ISR mark of an accepted AlterPartition: the leader built the request when the replica had reached
        its HW (Partition.isFollowerInSync); if the leader's HW passed it since, say what let it."""
        l = steps[i][1]["l"]
        states = [_S(st, self.R) for _, _, st in steps[:i + 1]]
        sent = next((k for k in range(i, 0, -1) if not _flag(states[k - 1], "ap_sent", l)
                     and _flag(states[k], "ap_sent", l)), None)
        if sent is None:
            return text
        head = text.split(": it had only reached")[0].split(": its log differs")[0]
        reason = (f"r{l} proposed it at step {sent}, with its HW at {states[sent].get('hw', l)} "
                  f"(Partition.isFollowerInSync)")
        dropped = next((k for k in range(sent + 1, i + 1) if _flag(states[k - 1], "alter_pending", l)
                        and not _flag(states[k], "alter_pending", l)), None)
        if dropped is not None:
            joiner = text.split(" ")[0]
            hw = max(states[k].get("hw", l) for k in range(dropped, i + 1))
            reason += (f"; at step {dropped} ({steps[dropped][0]}) r{l} dropped the pending change from its maximal "
                       f"ISR, and its HW rose to {hw} without waiting for {joiner}")
        return f"{head}: {reason}."

    def meaning(self, invariant):
        """The invariant's meaning with the controller's partition state in the metadata log, not ZooKeeper."""
        return (super().meaning(invariant).replace("(in ZooKeeper)", "(in the metadata log)")
                .replace("in ZooKeeper", "in the metadata log"))

    def phrase(self, prev, cur, name, params):
        text = self._kraft_phrase(prev, cur, name, params)
        if text is None:
            text = super().phrase(prev, cur, name, params)
        if name in ("fetch", "fetch_partial", "fetch_response", "produce", "alter_partition_response",
                    "apply_metadata", "lag_expires"):
            held = _held_back(cur, cur.R)
            if held:
                text = text[:-1] + "; " + "; ".join(held) + "."
        return text

    def _kraft_phrase(self, prev, cur, name, params):
        R, p, spec = cur.R, params, self.spec
        if name == "elect_leader":
            return self._elect_phrase(prev, cur, p["l"])
        if name == "apply_metadata":
            return self._apply_phrase(prev, cur, p["r"], p["k"])
        if name == "fence_broker":
            r = p["r"]
            text = (f"r{r}'s session expires (no heartbeat for broker.session.timeout.ms): the controller fences it")
            if prev.isr() != cur.isr() or prev.get("q_leader") != cur.get("q_leader"):
                text += f" and takes it out of the ISR: ISR {_set(cur.isr())}{_election(prev, cur, R)}"
            elif r in prev.isr():
                text += " (the last ISR member stays: ELR is off)"
            return text + "."
        if name == "unfence_broker":
            r = p["r"]
            text = f"r{r} asks to be unfenced and the controller unfences it"
            if prev.get("q_leader") != cur.get("q_leader"):
                how = " from the ELR (a clean election, KIP-966)" if r not in prev.isr() else ""
                text += (f"; the leaderless partition elects it{how} (leader epoch {cur.get('q_epoch')}, ISR "
                         f"{_set(cur.isr())})")
            return text + "."
        if name == "controlled_shutdown":
            r = p["r"]
            kept = " (the last ISR member stays: ELR is off)" if r in cur.isr() else ""
            return (f"r{r} asks to shut down: the controller puts it in controlled shutdown and takes it out of the "
                    f"ISR{kept}: ISR {_set(cur.isr())}{_election(prev, cur, R)}.")
        if name == "elect_last_known_leader":
            fenced = " although it is fenced (KAFKA-19522)" if _flag(prev, "fenced", p["l"]) else ""
            return (f"The ISR and the ELR are empty: the controller elects r{p['l']}, the last known leader "
                    f"(lastKnownElr, KIP-966){fenced}, for leader epoch {cur.get('q_epoch')} — unclean: ISR "
                    f"{_set(cur.isr())}, the leader RECOVERING.")
        if name == "lag_expires":
            l, f = p["l"], p["f"]
            if _flag(prev, "caught_up", l, f):
                remote = prev.get("remote_leo", l, f)
                fetched = "no fetch yet" if remote is None or remote < 0 else f"fetched up to {remote}"
                return (f"replica.lag.time.max.ms passes: r{f} ({fetched}) is no longer caught up with leader "
                        f"r{l} (LEO {prev.get('leo', l)}).")
            return (f"replica.lag.time.max.ms passes since r{f}'s last fetch from r{l}: a fetch reaching r{l}'s LEO "
                    f"of that time no longer counts as caught up.")
        if name == "truncate_on_fetch_response":
            f = p["f"]
            return f"r{f} truncates its log to offset {cur.get('leo', f)} as the DivergingEpoch answer says."
        if name == "maybe_shrink_isr":
            l = p["l"]
            out = [i for i in range(R) if _flag(prev, "isr", l, i) and not _flag(cur, "pending_isr", l, i)]
            return (f"Leader r{l}'s isr-expiration task finds {', '.join(f'r{i}' for i in out)} out of sync (not "
                    f"caught up within replica.lag.time.max.ms) and sends AlterPartition proposing ISR "
                    f"{_set(_pending(cur, l, R))}.")
        if name in ("alter_partition", "alter_partition_elects"):
            return self._alter_phrase(prev, cur, p["l"], R, spec)
        if name == "alter_partition_reassignments":
            target = _set([i for i in range(R) if p["t"] >> i & 1])
            head = f"The admin reassigns the partition to {target} (r{p['p']} first)"
            if _members(cur, "q_adding", R) or _members(cur, "q_removing", R):
                return (f"{head}: the controller records replicas {_set(_members(cur, 'q_replicas', R))} (adding "
                        f"{_set(_members(cur, 'q_adding', R))}, removing {_set(_members(cur, 'q_removing', R))}), "
                        f"leader {_who(R, cur.get('q_leader'))}, leader epoch {cur.get('q_epoch')}.")
            return (f"{head}: the ISR already holds the target, so the controller's first record completes it: "
                    f"replicas {_set(_members(cur, 'q_replicas', R))}, ISR {_set(cur.isr())}, leader "
                    f"{_who(R, cur.get('q_leader'))}, leader epoch {cur.get('q_epoch')}.")
        if name == "alter_partition_response":
            return self._answer_phrase(prev, cur, p["l"], R)
        if name == "alter_partition_response_lost":
            return (f"The answer to r{p['l']}'s AlterPartition is lost on the way: AlterPartitionManager sends the "
                    f"request again.")
        if name in ("fetch", "fetch_partial"):
            return self._fetch_phrase(prev, cur, p["f"], p["l"], spec, partial=name == "fetch_partial")
        if name == "fetch_response":
            return self._response_phrase(prev, cur, p["f"], p["l"], spec)
        if name == "fetch_response_lost":
            return f"r{p['l']}'s answer to r{p['f']}'s fetch is lost; r{p['f']} will fetch again from the same offset."
        if name == "image_registration":
            l, i = p["l"], p["i"]
            now = "eligible" if _flag(cur, "eligible_view", l, i) else "not eligible"
            return (f"r{l}'s metadata image of r{i}'s registration changes: r{i} is now {now} for the ISR in r{l}'s "
                    f"view (Partition.isReplicaIsrEligible).")
        if name == "restart":
            r = p["r"]
            text = (f"r{r} restarts with HW {cur.get('hw', r)} and registers a new incarnation (a new broker epoch), "
                    f"fenced until it asks to be unfenced")
            if prev.isr() != cur.isr() or any(_flag(prev, "q_elr", i) != _flag(cur, "q_elr", i) for i in range(R)):
                text += (f"; the controller counts it an unclean shutdown and takes it out of the ISR and the ELR: "
                         f"ISR {_set(cur.isr())}")
            return text + "."
        if name == "crash":
            r = p["r"]
            return (f"r{r} crashes (hard stop): on disk it keeps the HW checkpoint {prev.get('checkpoint_hw', r)}; "
                    f"the controller still has it registered until its session expires.")
        return None

    @staticmethod
    def _elect_phrase(prev, cur, l):
        R = cur.R
        had = prev.get("q_leader")
        if had is not None and had < R:
            how = f"a preferred-leader election gives leadership back to r{l}, the preferred replica"
        elif prev.get("q_epoch") == 0:
            how = f"the controller creates the partition with r{l} as leader"
        else:
            how = f"the controller elects r{l} leader of the leaderless partition"
        if _flag(prev, "q_elr", l) and not prev.isr():
            how += " from the ELR (the ISR is empty: a clean election, KIP-966)"
        elif l not in prev.isr():
            how += f" — unclean: r{l} was in neither the ISR nor the ELR"
        return f"{how[0].upper()}{how[1:]}: leader epoch {cur.get('q_epoch')}, ISR {_set(cur.isr())}."

    @staticmethod
    def _apply_phrase(prev, cur, r, k):
        R = cur.R
        leader, epoch, isr = _record(prev, k, R)
        lag = prev.get("img_lag", r)
        which = (f"the partition record of leader epoch {epoch}" if lag - k == 1
                 else f"{lag - k} partition records, up to the one of leader epoch {epoch}")
        head = f"r{r}'s metadata listener publishes {which}"
        if prev.get("img_replica", r) is not None and not _flag(cur, "img_replica", r):
            if _flag(prev, "img_replica", r):
                return f"{head}: r{r} is no longer a replica: it stops the partition and deletes its log."
            if prev.get("leo", r):
                return f"{head}: r{r} is no replica: its log from before its restart is stray and goes."
            return f"{head}: r{r} holds no replica."
        if k > prev.get("pe_lag", r):
            return f"{head}: r{r}'s Partition already has a newer partition epoch and skips it."
        if leader == r:
            if prev.get("leader", r) == r and prev.get("leader_epoch", r) == epoch:
                same = k == prev.get("pe_lag", r)
                text = (f"{head}: makeLeader runs again{' at its own partition epoch' if same else ''} and the "
                        f"partition state becomes ISR {_set(isr)}")
                if _flag(prev, "alter_pending", r) and not _flag(cur, "alter_pending", r):
                    text += (f", dropping its pending AlterPartition (ISR {_set(_pending(prev, r, R))}), which stays "
                             f"in flight")
                elif _flag(prev, "alter_pending", r):
                    text += f" (its pending AlterPartition for ISR {_set(_pending(prev, r, R))} stays pending)"
                return text + "."
            return f"{head}: makeLeader: r{r} becomes leader (ISR {_set(isr)})."
        if leader is None or leader >= R:
            return f"{head}: makeFollower: the partition has no leader, r{r} stops fetching."
        restarts = " and restarts its fetcher" if epoch != prev.get("leader_epoch", r) else ""
        return f"{head}: makeFollower: r{r} follows r{leader}{restarts}."

    @staticmethod
    def _alter_phrase(prev, cur, l, R, spec):
        head = f"The controller handles r{l}'s AlterPartition (ISR {_set(_pending(prev, l, R))})"
        text = f"{head}: {_alter_outcome(prev, cur, l, R, spec)[1]}"
        if not _flag(prev, "up", l):
            text = text[:-1] + f"; r{l} is down, nobody reads the answer."
        return text

    @staticmethod
    def _answer_phrase(prev, cur, l, R):
        answer = _ANSWERS.get(prev.get("ap_resp", l), "an answer")
        head = f"r{l} reads the answer to its AlterPartition ({answer})"
        if not _flag(prev, "alter_pending", l):
            return (f"{head}: its partition state is no longer the one it proposed (makeLeader or makeFollower "
                    f"replaced it), so it ignores the answer.")
        if prev.get("ap_resp", l) == 1:
            return f"{head}: its partition state becomes ISR {_set([i for i in range(R) if _flag(cur, 'isr', l, i)])}."
        if prev.get("ap_resp", l) == 4:
            return f"{head}: it goes back to its last committed ISR {_set([i for i in range(R) if _flag(cur, 'isr', l, i)])}."
        return f"{head}: the partition state stays pending until new metadata arrives (handleAlterPartitionError)."

    @staticmethod
    def _fetch_phrase(prev, cur, f, l, spec, partial=False):
        a = prev.get("leo", f)
        if not _flag(cur, "resp_sent", f, l) and cur.get("leo", f) is not None and not _flag(cur, "truncating", f):
            b = cur.get("leo", f)
            got = f"offsets {a}..{b - 1}" if b > a else "nothing new"
            if partial:
                got += f" (fewer than r{l} has: the answer's size limit)"
            text = f"r{f} fetches from r{l} at offset {a}: gets {got}, learns HW {cur.get('hw', f)}"
        elif _flag(cur, "resp_sent", f, l):
            text = f"r{f} fetches from r{l} at offset {a}: r{l} reads it and answers"
            if _flag(cur, "resp_diverging", f, l):
                text += " DivergingEpoch"
        else:
            epoch = prev.cache_latest_epoch(f)
            text = (f"r{f} fetches from r{l} at offset {a} with last fetched epoch {epoch}: r{l}'s log diverges, it "
                    f"answers DivergingEpoch and no records (r{f} must truncate to offset "
                    f"{cur.get('diverging_end', f)})")
            if spec.hw_before_truncation and prev.get("hw", f) != cur.get("hw", f):
                text += (f"; r{f} applies the response's HW {cur.get('hw', f)} before truncating (KAFKA-14704, "
                         f"fixed in 3.5)")
            if spec.records_diverging_fetch and prev.get("remote_leo", l, f) != cur.get("remote_leo", l, f):
                text += (f"; r{l} records r{f}'s fetch offset {a} although it diverges (KAFKA-13141, fixed in "
                         f"2.7.2/3.0)")
        added = [i for i in _pending(cur, l, cur.R) if not _flag(cur, "isr", l, i)]
        if added and not _flag(prev, "alter_pending", l) and _flag(cur, "alter_pending", l):
            text += f"; r{l} sends AlterPartition adding {', '.join(f'r{i}' for i in added)}"
        return text + "."

    @staticmethod
    def _response_phrase(prev, cur, f, l, spec):
        offset = prev.get("resp_offset", f, l)
        head = f"r{f} reads r{l}'s answer to its fetch at offset {offset}"
        if prev.get("leo", f) == cur.get("leo", f) and not _flag(cur, "truncating", f):
            return f"{head}: the partition's fetch state moved on (another leader, offset or a truncation); dropped."
        stale = prev.get("resp_leader_epoch", f, l) != prev.get("leader_epoch", f)
        note = ""
        if stale:
            note = (f" — the request was sent in leader epoch {prev.get('resp_leader_epoch', f, l)}, r{f} is now on "
                    f"{prev.get('leader_epoch', f)} (KAFKA-18991: the fetcher does not compare them)")
        if _flag(cur, "truncating", f):
            return (f"{head}: DivergingEpoch, r{f} must truncate to offset {cur.get('diverging_end', f)}{note}.")
        return f"{head}: appends offsets {offset}..{cur.get('leo', f) - 1}, learns HW {cur.get('hw', f)}{note}."

    def truncation(self, prev, cur, name, params, r):
        if name == "truncate_on_fetch_response":
            return (f"r{r} truncated to offset {len(cur.log(r))}, where the DivergingEpoch answer says its log "
                    f"diverges from its leader's (truncate-on-fetch, 2.7+)")
        return super().truncation(prev, cur, name, params, r)

    def message(self, name, params, prev, cur):
        p, pr, cu = params, _S(prev, self.R), _S(cur, self.R)
        if name in ("fetch", "fetch_partial") and _flag(cu, "truncating", p["f"]):
            return f"r{p['f']}", f"r{p['l']}", f"Fetch(offset {pr.get('leo', p['f'])}): DivergingEpoch"
        if name == "truncate_on_fetch_response":
            f = p["f"]
            return f"r{f}", f"r{f}", f"truncate {pr.get('leo', f)}→{cu.get('leo', f)} (DivergingEpoch)"
        if name == "lag_expires":
            return f"r{p['l']}", f"r{p['l']}", f"r{p['f']} lags (replica.lag.time.max.ms)"
        if name == "alter_partition":
            ok = _alter_outcome(pr, cu, p["l"], self.R, self.spec)[0]
            return f"r{p['l']}", "Controller", f"AlterPartition: {'accepted' if ok else 'rejected'}"
        if name == "alter_partition_elects":
            return f"r{p['l']}", "Controller", f"AlterPartition completes the reassignment: r{p['n']} leads"
        if name == "alter_partition_reassignments":
            target = _set([i for i in range(self.R) if p["t"] >> i & 1])
            return "Admin", "Controller", f"AlterPartitionReassignments: {target}"
        if name == "alter_partition_response":
            return "Controller", f"r{p['l']}", "AlterPartition answer read"
        if name == "alter_partition_response_lost":
            return "Controller", f"r{p['l']}", "AlterPartition answer lost"
        if name == "elect_last_known_leader":
            return "Controller", f"r{p['l']}", f"elect last known leader r{p['l']} (unclean), epoch {cu.get('q_epoch')}"
        if name == "controlled_shutdown":
            return f"r{p['r']}", "Controller", f"controlled shutdown: ISR {_set(cu.isr())}"
        if name == "fence_broker":
            return "Controller", "Controller", f"fence r{p['r']}: ISR {_set(cu.isr())}, leader {_who(self.R, cu.get('q_leader'))}"
        if name == "unfence_broker":
            return f"r{p['r']}", "Controller", "unfence"
        if name == "apply_metadata":
            leader, epoch, _ = _record(pr, p["k"], self.R)
            role = "leader" if leader == p["r"] else f"follow {_who(self.R, leader)}"
            return "Controller", f"r{p['r']}", f"partition record of leader epoch {epoch} applied: {role}"
        if name == "maybe_shrink_isr":
            return f"r{p['l']}", "Controller", f"AlterPartition: ISR {_set(_pending(cu, p['l'], self.R))}"
        if name in ("fetch_response", "fetch_response_lost"):
            return f"r{p['l']}", f"r{p['f']}", "Fetch answer " + ("read" if name == "fetch_response" else "lost")
        if name == "image_registration":
            return f"r{p['l']}", f"r{p['l']}", f"image: r{p['i']} registration"
        sender, receiver, text = _message(name, params, pr, cu, self.R)
        return sender, receiver, text.replace("LeaderAndIsr epoch", "partition record of leader epoch")

    def state_label(self, state):
        return super().state_label(state).replace("ZK:", "controller:")
