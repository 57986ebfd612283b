"""The KRaft family's presentation: the Kafka presentation, with the KRaft-era steps said in Kafka terms.

``KRaftPresentation`` (``KRaftReplication.presentation_class``) narrates what model/kraft.py adds or
re-reads: the controller's partition records in the metadata log, fetches answered with DivergingEpoch and
the truncation that follows, AlterPartition accepted or rejected (and why: a stale partition epoch, leader
epoch or broker epoch), KIP-966's election of the last known leader, the lag of a follower, and a caught-up
replica outside the ISR holding back the HW (shouldWaitForReplicaToJoinIsr). Everything else reads as in
model/kafka_present.py.
"""
from __future__ import annotations

from isrcheck.model.kafka_present import KafkaPresentation, _message, _S, _set
from isrcheck.model.present import Line


def _flag(state, name, *idx):
    return bool(state.get(name, *idx, default=False))


def _pending(state, l, R):
    return [i for i in range(R) if _flag(state, "pending_isr", l, i)]


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


def _alter_outcome(prev, l, R, spec):
    """(accepted, why) of leader l's AlterPartition, as ReplicationControlManager.alterPartition decides."""
    if prev.get("q_leader") != l or prev.get("leader_epoch", l) != prev.get("q_epoch"):
        return False, f"rejected, r{l} no longer leads in its leader epoch (FENCED_LEADER_EPOCH)."
    if not _flag(prev, "zk_version_current", l):
        return False, f"rejected, the partition epoch moved on since r{l} learnt it (INVALID_UPDATE_VERSION)."
    added = [i for i in _pending(prev, l, R) if not _flag(prev, "isr", l, i)]
    who = ", ".join(f"r{i}" for i in added) or "a member"
    leaving = [i for i in added if _flag(prev, "shutting_down", i)]
    if leaving:
        return False, (f"rejected, r{leaving[0]} is in controlled shutdown (INELIGIBLE_REPLICA, KIP-841).")
    if not _flag(prev, "pending_epochs_current", l):
        if spec.checks_broker_epochs:
            return False, (f"rejected, the broker epoch it carries for {who} is stale ({who} registered again since "
                           f"its fetch; INELIGIBLE_REPLICA, KIP-903).")
        return True, (f"accepted, although {who} registered again since the fetch the request was built from: no "
                      f"broker-epoch check (KAFKA-14617, fixed by KIP-903 in 3.5).")
    return True, "accepted: new ISR and partition epoch."


class KRaftPresentation(KafkaPresentation):
    """Traces of the KRaft model (see the module doc)."""

    narrated = (KafkaPresentation.narrated - {"truncate_by_epoch", "exit_out_of_range", "fetch_response_lost",
                                              "controller_failover", "apply_stale_leader_and_isr", "alter_isr",
                                              "restart_unnoticed"}
                | {"truncate_on_fetch_response", "lag_expires", "alter_partition", "apply_partition_change",
                   "controlled_shutdown", "elect_last_known_leader"})

    def explain(self, trace, invariant=None):
        """As the Kafka family's, with the controller's state in the metadata log rather than ZooKeeper."""
        return [Line(line.step, line.text.replace("in ZooKeeper", "in the metadata log"), line.kind)
                for line in super().explain(trace, invariant)]

    def phrase(self, prev, cur, name, params):
        text = self._kraft_phrase(prev, cur, name, params)
        if text is None:
            text = super().phrase(prev, cur, name, params)
        if name in ("fetch", "produce", "alter_partition", "apply_partition_change", "lag_expires"):
            held = _held_back(cur, cur.R)
            if held:
                text = text[:-1] + "; " + "; ".join(held) + "."
        return text

    def _kraft_phrase(self, prev, cur, name, params):
        R, p, spec = cur.R, params, self.spec
        if name == "apply_leader_and_isr":
            return super().phrase(prev, cur, name, params).replace(
                "applies LeaderAndIsr of epoch", "applies the metadata log's partition record of leader epoch")
        if name == "controller_shrink_isr":
            return (f"The controller fences dead r{p['r']} and removes it from the ISR: ISR {_set(cur.isr())}, leader "
                    f"epoch stays {cur.get('q_epoch')}, the partition epoch moves on.")
        if name == "controlled_shutdown":
            r = p["r"]
            kept = " (the last ISR member stays)" if r in cur.isr() else ""
            return (f"r{r} asks to shut down: the controller puts it in controlled shutdown and takes it out of the "
                    f"ISR{kept}: ISR {_set(cur.isr())}, leader epoch stays {cur.get('q_epoch')}.")
        if name == "elect_last_known_leader":
            return (f"The ISR and the ELR are empty: the controller elects r{p['l']}, the last known leader "
                    f"(lastKnownElr, KIP-966), for leader epoch {cur.get('q_epoch')} — unclean: ISR "
                    f"{_set(cur.isr())}, the leader RECOVERING.")
        if name == "apply_partition_change":
            return (f"Leader r{p['r']} applies the controller's ISR change of its leader epoch: ISR "
                    f"{_set(cur.isr())}, new partition epoch.")
        if name == "lag_expires":
            l, f = p["l"], p["f"]
            return (f"replica.lag.time.max.ms passes: r{f} (fetched up to {prev.get('remote_leo', l, f)}) is no "
                    f"longer caught up with leader r{l} (LEO {prev.get('leo', l)}).")
        if name == "truncate_on_fetch_response":
            f = p["f"]
            return f"r{f} truncates its log to offset {cur.get('leo', f)} as the DivergingEpoch answer says."
        if name == "shrink_isr":
            return (f"Leader r{p['l']} sends AlterPartition dropping r{p['f']}, which is not caught up, from the "
                    f"ISR (proposes {_set(_pending(cur, p['l'], R))}).")
        if name == "alter_partition":
            return self._alter_phrase(prev, cur, p["l"], R, spec)
        if name == "fetch":
            return self._fetch_phrase(prev, cur, p["f"], p["l"], spec)
        return None

    @staticmethod
    def _alter_phrase(prev, cur, l, R, spec):
        head = f"The controller handles r{l}'s AlterPartition (ISR {_set(_pending(prev, l, R))})"
        return f"{head}: {_alter_outcome(prev, l, R, spec)[1]}"

    @staticmethod
    def _fetch_phrase(prev, cur, f, l, spec):
        a, b = prev.get("leo", f), cur.get("leo", f)
        if not _flag(cur, "truncating", f):
            got = f"offsets {a}..{b - 1}" if b > a else "nothing new"
            text = f"r{f} fetches from r{l} at offset {a}: gets {got}, learns HW {cur.get('hw', f)}"
            added = [i for i in _pending(cur, l, cur.R) if not _flag(cur, "isr", l, i)]
            if added and not _flag(prev, "alter_pending", l):
                text += f"; r{l} sends AlterPartition adding {', '.join(f'r{i}' for i in added)}"
            return text + "."
        epoch = prev.cache_latest_epoch(f)
        text = (f"r{f} fetches from r{l} at offset {a} with last fetched epoch {epoch}: r{l}'s log diverges, it "
                f"answers DivergingEpoch and no records (r{f} must truncate to offset {cur.get('diverging_end', f)})")
        if spec.hw_before_truncation and prev.get("hw", f) != cur.get("hw", f):
            text += (f"; r{f} applies the response's HW {cur.get('hw', f)} before truncating (KAFKA-14704, "
                     f"fixed in 3.5)")
        if spec.records_diverging_fetch and prev.get("remote_leo", l, f) != cur.get("remote_leo", l, f):
            text += (f"; r{l} records r{f}'s fetch offset {a} although it diverges (KAFKA-13141, fixed in "
                     f"2.7.2/3.0)")
        return text + "."

    def truncation(self, prev, cur, name, params, r):
        if name == "truncate_on_fetch_response":
            return (f"r{r} truncated to offset {len(cur.log(r))}, where the DivergingEpoch answer says its log "
                    f"diverges from its leader's (truncate-on-fetch, 2.7+)")
        return super().truncation(prev, cur, name, params, r)

    def message(self, name, params, prev, cur):
        p, pr, cu = params, _S(prev, self.R), _S(cur, self.R)
        if name == "fetch" and _flag(cu, "truncating", p["f"]):
            return f"r{p['f']}", f"r{p['l']}", f"Fetch(offset {pr.get('leo', p['f'])}): DivergingEpoch"
        if name == "truncate_on_fetch_response":
            f = p["f"]
            return f"r{f}", f"r{f}", f"truncate {pr.get('leo', f)}→{cu.get('leo', f)} (DivergingEpoch)"
        if name == "lag_expires":
            return f"r{p['l']}", f"r{p['l']}", f"r{p['f']} lags (replica.lag.time.max.ms)"
        if name == "alter_partition":
            ok = _alter_outcome(pr, p["l"], self.R, self.spec)[0]
            return f"r{p['l']}", "Controller", f"AlterPartition: {'accepted' if ok else 'rejected'}"
        if name == "elect_last_known_leader":
            return "Controller", f"r{p['l']}", f"elect last known leader r{p['l']} (unclean), epoch {cu.get('q_epoch')}"
        if name == "controlled_shutdown":
            return f"r{p['r']}", "Controller", f"controlled shutdown: ISR {_set(cu.isr())}"
        if name == "apply_partition_change":
            return "Controller", f"r{p['r']}", f"PartitionChangeRecord applied: ISR {_set(cu.isr())}"
        if name == "shrink_isr":
            return f"r{p['l']}", "Controller", f"AlterPartition: drop r{p['f']}"
        sender, receiver, text = _message(name, params, pr, cu, self.R)
        return sender, receiver, text.replace("LeaderAndIsr epoch", "partition record of leader epoch")

    def state_label(self, state):
        return super().state_label(state).replace("ZK:", "controller:")
