"""The Kafka family's presentation: its traces in words, tables and diagrams, in Kafka terms.

``KafkaPresentation`` (``KafkaReplication.presentation_class``) is what ``isrcheck
show``, its Mermaid and dot output, and the gate's Markdown summary use for every
spec built on ``model/kafka.py`` (see ``model/present.py`` for the hook).

``explain`` gives one sentence per step (the action, plus what changed: log
appends and truncations, HW moves, ISR changes, acknowledgements), followed,
at the same index, by marks for the steps that matter. Each Line has a
``kind``: ``"step"`` for the per-step sentence, and for the marks:

- ``"acked"``: a record is acknowledged to the producer (it is committed);
- ``"lost"``: a committed (acknowledged or consumer-visible) record leaves a
  replica's log, naming the replica and the protocol rule that allowed it
  ("r1 truncated to its local HW 0 on becoming follower — pre-0.11
  behaviour", "... after an UNDEFINED OffsetsForLeaderEpoch answer from a
  leader on an older epoch — fenced since KIP-320");
- ``"isr"``: a replica joins the ISR without all of the writer's log;
- ``"leader"``: a replica becomes the acting leader without a committed record;
- ``"diverged"``: two replicas' logs first disagree at an offset both hold;
- ``"violated"``: the invariant fails (the last step), with what that means.

Everything is derived from the decoded states (field differences between
consecutive states) and the action names of the Kafka model, every one of
which is narrated (``narrated``: renaming one in model/kafka.py without this
module makes every Kafka spec fail to load); an action a spec adds without
narration is said by its label and the fields it changed; fields a spec does
not have (its options are off) are skipped.

The Mermaid diagram has participants Controller, Producer, r0..rN and one
message per step (controller decisions go from Controller, LeaderAndIsr
applications from Controller to the broker, produce requests from Producer,
fetches and OffsetsForLeaderEpoch from follower to leader, ISR changes from the
leader to Controller; crashes, restarts and other broker-local steps are
messages from a broker to itself).
"""
from __future__ import annotations

from isrcheck.model.present import Line, Presentation, step_label

UNACKED = -1


class _S:
    """Read helpers over one decoded state."""

    def __init__(self, state, R):
        self.d, self.R = state, R

    def has(self, *names):
        return all(n in self.d for n in names)

    def get(self, name, *idx, default=None):
        v = self.d.get(name)
        if v is None:
            return default
        for i in idx:
            v = v[i]
        return v

    def log(self, r):
        if not self.has("log_record", "log_epoch", "leo"):
            return []
        return [(self.d["log_record"][r][o], self.d["log_epoch"][r][o]) for o in range(self.d["leo"][r])]

    def cache_latest_epoch(self, r):
        """The latest epoch in r's leader-epoch cache, what its OffsetsForLeaderEpoch carries (0: none;
        KafkaReplication.cache_latest_epoch)."""
        starts = self.get("epoch_cache", r, default=[])
        return max((e + 1 for e, start in enumerate(starts) if start is not None and start >= 0), default=0)

    def believes_leads(self, r):
        return bool(self.get("up", r, default=True)) and self.get("leader", r) == r

    def acting_leader(self, r):
        return (self.believes_leads(r) and self.get("q_leader") == r
                and self.get("leader_epoch", r) == self.get("q_epoch"))

    def acting_leaders(self):
        return [r for r in range(self.R) if self.acting_leader(r)]

    def acked(self):
        """{record id: offset} of every acknowledged record."""
        return {m + 1: o for m, o in enumerate(self.get("acked_at", default=[])) if o is not None and o >= 0}

    def exposed(self):
        return {o: m for o, m in enumerate(self.get("exposed", default=[])) if m}

    def isr(self):
        return [i for i, b in enumerate(self.get("q_isr", default=[])) if b]


def _set(rs):
    return "{" + ",".join(f"r{r}" for r in rs) + "}"


def _who(R, r):
    return "nobody" if r is None or r >= R else f"r{r}"


# ======================================================================================
# why a log got shorter
# ======================================================================================
def truncation_rule(prev, cur, name, params, r):
    """A sentence naming who truncated, to where, and the protocol rule that allowed it."""
    old, new = prev.log(r), cur.log(r)
    to = len(new)
    hw = prev.get("hw", r)
    R = prev.R
    if name == "crash":
        return (f"r{r} lost the unflushed tail of its log in a hard crash "
                f"(flushed up to offset {prev.get('flushed', r, default='?')})")
    leader = cur.get("leader", r)
    if name in ("apply_leader_and_isr", "apply_stale_leader_and_isr") or (
            name != "truncate_by_epoch" and prev.get("leader", r) != leader and leader is not None
            and leader < R and leader != r):
        if to == hw:
            return (f"r{r} truncated to its local HW {hw} on becoming follower of {_who(R, leader)} "
                    f"— pre-0.11 behaviour (KIP-101 replaced it with leader-epoch truncation)")
        return f"r{r} truncated its log to offset {to} on becoming follower of {_who(R, leader)}"
    if name == "truncate_by_epoch":
        l = params.get("l")
        epoch = prev.cache_latest_epoch(r)
        leader_log = prev.log(l) if l is not None else []
        leader_has = any(e >= epoch for _, e in leader_log)
        if to == hw and not leader_has:
            text = (f"r{r} truncated to its HW {hw} after an UNDEFINED OffsetsForLeaderEpoch answer from r{l}")
            le, fe = prev.get("leader_epoch", l), prev.get("leader_epoch", r)
            if le is not None and fe is not None and le < fe:
                return text + (f", a leader on an older epoch ({le} < {fe}) — fenced since KIP-320 "
                               f"(requests carry the current leader epoch)")
            return text + (f" (its log has no epoch {epoch} or later; since KAFKA-7415 a leader answers "
                           f"for its own epoch from election on)")
        return (f"r{r} truncated to offset {to}, the end of epoch {epoch} or earlier as leader r{l} "
                f"answered OffsetsForLeaderEpoch (KIP-101/KIP-279)")
    if name in ("fetch", "fetch_response_lost"):
        l = params.get("l")
        return f"r{r} truncated to leader r{l}'s LEO {to} (its fetch offset was out of range)"
    if name == "apply_stop_replica":
        return f"r{r} deleted its log: the reassignment removed its replica (StopReplica, delete=true)"
    return f"r{r}'s log went from LEO {len(old)} to {to} ({name})"


# ======================================================================================
# one sentence per step
# ======================================================================================
def _action_phrase(prev, cur, name, params, halts=False):
    R = cur.R
    p = params
    if name is None:
        n_up = sum(1 for r in range(R) if cur.get("up", r, default=True))
        logs = "empty logs" if all(not cur.log(r) for r in range(R)) else \
            "logs " + ", ".join(f"r{r}: LEO {len(cur.log(r))}" for r in range(R))
        q = cur.get("q_leader")
        leader = "no leader elected yet" if q is None or q >= R else f"r{q} leads epoch {cur.get('q_epoch')}"
        return f"Initial state: {R} replicas, {n_up} up, ISR {_set(cur.isr())}, {logs}, {leader}."
    if name == "elect_leader":
        l = p["l"]
        if prev.get("q_isr", l, default=True):
            unclean = ""
        elif prev.get("q_elr", l, default=False):
            unclean = f" from the eligible leader replicas (KIP-966: no live ISR member; a clean election)"
        else:
            unclean = f" — unclean: r{l} was not in the ISR"
        return (f"Controller elects r{l} leader for epoch {cur.get('q_epoch')} with ISR {_set(cur.isr())}"
                f"{unclean}.")
    if name == "controller_shrink_isr":
        return (f"Controller removes dead r{p['r']} from the ISR: epoch {cur.get('q_epoch')}, "
                f"ISR {_set(cur.isr())}.")
    if name == "controller_offline":
        return (f"Leader r{p['r']} is dead and no ISR member is alive: the partition goes offline "
                f"(epoch {cur.get('q_epoch')}, ISR {_set(cur.isr())}).")
    if name == "controller_failover":
        return (f"The controller fails over; the deposed controller's LeaderAndIsr electing r{p['l']} "
                f"is still in flight.")
    if name in ("apply_leader_and_isr", "apply_stale_leader_and_isr"):
        r = p["r"]
        e = p.get("e", cur.get("leader_epoch", r))
        leader = cur.get("leader", r)
        src = "the deposed controller's LeaderAndIsr" if name == "apply_stale_leader_and_isr" else "LeaderAndIsr"
        if leader == r:
            role = "becomes leader"
        elif leader is None or leader >= R:
            role = "learns the partition has no leader"
        else:
            role = f"becomes follower of r{leader}"
        return f"r{r} applies {src} of epoch {e}: {role}."
    if name == "produce":
        l = p["l"]
        o = prev.get("leo", l)
        rec = cur.get("log_record", l, o) if o is not None else None
        ep = cur.get("log_epoch", l, o) if o is not None else None
        return f"Producer appends record {rec} to r{l} at offset {o} (epoch {ep})."
    if name == "fetch":
        f, l = p["f"], p["l"]
        a, b = prev.get("leo", f), cur.get("leo", f)
        got = f"offsets {a}..{b - 1}" if b is not None and a is not None and b > a else "nothing new"
        return f"r{f} fetches from r{l}: gets {got}, learns HW {cur.get('hw', f)}."
    if name == "fetch_response_lost":
        return f"r{p['f']}'s fetch from r{p['l']} is handled by the leader but the response is lost."
    if name == "truncate_by_epoch":
        f, l = p["f"], p["l"]
        return (f"r{f} asks r{l} for the end offset of epoch {prev.cache_latest_epoch(f)} "
                f"(OffsetsForLeaderEpoch).")
    if name == "shrink_isr":
        return f"Leader r{p['l']} drops r{p['f']} from the ISR."
    if name == "lag_expires":
        l, f = p["l"], p["f"]
        if not cur.believes_leads(l):
            return (f"replica.lag.time.max.ms passes: the clock r{l} keeps of r{f} since it took the partition runs "
                    f"out (r{l} does not lead; it reads the clock when it does).")
        return f"replica.lag.time.max.ms passes without r{f} fetching from r{l}: r{l}'s clock of r{f} runs out."
    if name == "catch_up_lapses":
        return (f"replica.lag.time.max.ms passes with r{p['f']} fetching from r{p['l']}, but r{p['l']} appends "
                f"between any two of its fetches, so none starts at r{p['l']}'s log end: r{p['f']} no longer counts "
                f"as caught up.")
    if name == "fetcher_stops":
        return (f"r{p['f']}'s fetcher stops (a dead fetcher thread, or a network partition from its leader); its "
                f"ZooKeeper session lives on.")
    if name == "alter_isr":
        return f"The controller handles r{p['l']}'s AlterIsr request."
    if name == "flush":
        return f"r{p['r']} fsyncs its log up to offset {cur.get('flushed', p['r'])}."
    if name == "checkpoint_hw":
        return f"r{p['r']} writes its HW {cur.get('checkpoint_hw', p['r'])} to the checkpoint file."
    if name == "crash":
        r = p["r"]
        return f"r{r} crashes (hard stop): on disk it keeps the HW checkpoint {prev.get('checkpoint_hw', r)}."
    if name == "shutdown":
        return f"r{p['r']} shuts down cleanly (log flushed, HW checkpointed)."
    if name == "restart":
        return f"r{p['r']} restarts with HW {cur.get('hw', p['r'])}."
    if name == "exit_out_of_range":
        how = ("halts (Runtime.halt before 0.10.2: a hard stop, no HW checkpoint)" if halts
               else "exits (0.10.2-2.0)")
        return (f"r{p['f']}'s fetch offset {prev.get('leo', p['f'])} is past r{p['l']}'s LEO "
                f"{prev.get('leo', p['l'])} and truncation is not allowed (unclean election off): the broker "
                f"{how}.")
    if name == "restart_unnoticed":
        return (f"r{p['r']} restarts with HW {cur.get('hw', p['r'])} before the controller noticed it was down: "
                f"no LeaderAndIsr of epoch {cur.get('q_epoch')} is sent to it (KAFKA-1120).")
    if name in REASSIGNMENT_STEPS:
        return _reassignment_phrase(prev, cur, name, params)
    changed = [k for k in cur.d if prev.d.get(k) != cur.d.get(k)]
    return f"{step_label(name, params)}: changes {', '.join(changed) or 'nothing'}."


def _last_step(states, names, i, pred):
    """The last step k < i where ``pred(states[k - 1], states[k], names[k])`` holds, or None."""
    return next((k for k in range(i - 1, 0, -1) if pred(states[k - 1], states[k], names[k])), None)


def _shrink_reason(spec, states, steps, i):
    """Why leader l's lag rule let it drop follower f at step i, in Kafka's terms (None without a lag rule)."""
    rule = getattr(spec, "lag_rule", None)
    name, params, _ = steps[i]
    l, f = params["l"], params["f"]
    prev, names = states[i - 1], [n for n, _, _ in steps]
    if rule == "message":
        if not prev.get("fetched_recently", l, f):
            return f"r{f} has not fetched within replica.lag.time.max.ms"
        behind = prev.get("leo", l) - prev.get("remote_leo", l, f)
        text = (f"r{f} is {behind} messages behind (r{l}'s LEO {prev.get('leo', l)}, r{f}'s fetch offset "
                f"{prev.get('remote_leo', l, f)}), replica.lag.max.messages={spec.lag_max_messages}")
        fetched = names[i - 1] == "fetch" and steps[i - 1][1] == {"f": f, "l": l}
        return text + (", though it fetched at the last step" if fetched else "")
    if rule != "time":
        return None
    text = f"r{f} has not caught up within replica.lag.time.max.ms"
    ran_out = _last_step(states, names, i, lambda a, b, n: a.get("caught_up", l, f) and not b.get("caught_up", l, f))
    took_over = _last_step(states, names, i, lambda a, b, n: b.believes_leads(l) and not a.believes_leads(l))
    if ran_out is not None and (took_over is None or ran_out > took_over):
        if names[ran_out] == "catch_up_lapses":
            return text + (f" — none of its fetches started at r{l}'s log end (step {ran_out}; 0.9-0.10.1, "
                           f"KAFKA-4485 counts a fetch that reaches the LEO of the previous one)")
        return text + f" — it has not fetched from r{l} for that long (step {ran_out})"
    if took_over is not None:
        return text + (f" — r{l} became leader at step {took_over} with the lastCaughtUpTimeMs it had kept of r{f} "
                       f"from before, long run out (0.9-0.10.1 do not reset it on election; KAFKA-4485 does)")
    return text


REASSIGNMENT_STEPS = ("start_reassignment", "resume_reassignment", "complete_reassignment", "apply_stop_replica")


def _replica_set(s, field):
    return _set([i for i in range(s.R) if s.get(field, i)])


def _reassignment_phrase(prev, cur, name, params):
    """The sentence of a reassignment step (model/reassignment.py)."""
    epoch = cur.get("q_epoch")
    bumped = f"epoch {epoch}" if epoch != prev.get("q_epoch") else f"epoch still {epoch}"
    if name == "start_reassignment":
        target = _set([i for i in range(cur.R) if params["t"] >> i & 1])
        sent = (f"sends LeaderAndIsr (epoch {epoch})" if epoch != prev.get("q_epoch")
                else "sends nothing: the target is already in the ISR, the completion comes next")
        return (f"The admin reassigns the partition to {target}: the controller records replicas "
                f"{_replica_set(cur, 'q_replicas')} (adding {_replica_set(cur, 'q_adding')}, removing "
                f"{_replica_set(cur, 'q_removing')}) and {sent}.")
    if name == "resume_reassignment":
        return f"The controller resumes the reassignment: LeaderAndIsr to {_replica_set(cur, 'q_replicas')} ({bumped})."
    if name == "complete_reassignment":
        q = cur.get("q_leader")
        leader = "no leader" if q is None or q >= cur.R else f"r{q} leading"
        stopped = [r for r in range(cur.R) if cur.get("stop_epoch", r) and not prev.get("stop_epoch", r)]
        return (f"The target is in the ISR: the controller completes the reassignment, replicas "
                f"{_replica_set(cur, 'q_replicas')}, {leader}, ISR {_set(cur.isr())} ({bumped}); StopReplica "
                f"to {_set(stopped)}.")
    r = params["r"]
    return f"r{r} applies StopReplica: it drops the partition and deletes its log."


def _truncated(prev, cur, r):
    old = prev.log(r)
    return old != cur.log(r)[:len(old)]


def _changes(prev, cur, name, params, marked=(), rule=truncation_rule,
             isr_said=("elect_leader", "controller_shrink_isr", "controller_offline")):
    """Clauses for what else changed: truncations (``rule`` in full unless a mark will give it), HWs, and the ISR
    unless the step's sentence says it (``isr_said``)."""
    R = cur.R
    out = []
    said = set()
    for r in range(R):
        if _truncated(prev, cur, r):
            out.append(f"r{r} truncates its log to offset {len(cur.log(r))}" if r in marked
                       else rule(prev, cur, name, params, r))
            said.add(r)
    if name == "fetch":
        said.add(params.get("f"))
    if name in ("crash", "restart", "restart_unnoticed", "shutdown", "checkpoint_hw"):
        said.add(params.get("r"))
    if prev.has("hw"):
        out += [f"r{r}'s HW {prev.get('hw', r)}→{cur.get('hw', r)}" for r in range(R)
                if r not in said and prev.get("hw", r) != cur.get("hw", r)]
    if prev.has("q_isr") and prev.isr() != cur.isr() and name not in isr_said:
        out.append(f"ISR in ZooKeeper now {_set(cur.isr())}")
    return out


# ======================================================================================
# the story: acknowledgements, losses, divergence
# ======================================================================================
def _find_loss(states, R):
    """(record, offset, leader) for an acknowledged record missing from the final acting leader, if any."""
    last = states[-1]
    for l in last.acting_leaders():
        log = last.log(l)
        for m, o in sorted(last.acked().items()):
            if o >= len(log) or log[o][0] != m:
                return m, o, l
    return None


def _first_step(states, pred):
    for i, s in enumerate(states):
        if pred(s):
            return i
    return None


def _became_acting(states, l):
    """Step from which l is the acting leader until the end."""
    k = len(states) - 1
    while k > 0 and states[k - 1].acting_leader(l):
        k -= 1
    return k


def _divergence(prev, cur, R):
    """(a, b, offset) of a disagreement at an offset both hold, new in this step."""
    def diff(s):
        found = set()
        for a in range(R):
            for b in range(a + 1, R):
                la, lb = s.log(a), s.log(b)
                for o in range(min(len(la), len(lb))):
                    if la[o][0] != lb[o][0]:
                        found.add((a, b, o))
                        break
        return found
    new = diff(cur) - diff(prev) if prev is not None else diff(cur)
    return min(new) if new else None


def _ack_sentence(spec, prev, cur, name, params, m, o):
    """Who acknowledged a record, and how; says so when it was not the acting leader."""
    R = cur.R
    acks_all = bool(getattr(spec, "acks_all", True))
    if not acks_all:
        who = params.get("l") if name == "produce" else None
        how = "acks=1: on append"
    else:
        raised = [r for r in range(R) if (cur.get("hw", r) or 0) > o >= (prev.get("hw", r) or 0)
                  and o < len(cur.log(r)) and cur.log(r)[o][0] == m]
        who = raised[0] if raised else None
        how = (f"acks=all: r{who}'s HW passed offset {o}" if who is not None
               else f"acks=all: the leader's HW passed offset {o}")
    text = f"Record {m} at offset {o} is acknowledged to the producer ({how}): it is committed"
    if who is not None and not cur.acting_leader(who) and cur.has("q_leader"):
        q, qe, e = cur.get("q_leader"), cur.get("q_epoch"), cur.get("leader_epoch", who)
        if q == who:
            text += (f" — by r{who} on epoch {e}: it has not yet applied the LeaderAndIsr of epoch {qe} "
                     f"that the controller has written since")
        else:
            text += f" — by r{who}, a deposed leader still on epoch {e}: {_who(R, q)} leads epoch {qe} in ZooKeeper"
    return text + "."


def _join_sentence(prev, cur, j, params):
    """A replica added to the ISR while its log lacks or contradicts part of the writer's log."""
    R = cur.R
    l = params.get("l", cur.get("q_leader"))
    if l is None or l >= R or l == j:
        return None
    ll, lj = cur.log(l), cur.log(j)
    missing = [o for o in range(len(ll)) if o >= len(lj) or lj[o] != ll[o]]
    if not missing:
        return None
    o = missing[0]
    if lj == ll[:len(lj)]:
        why = f"it had only reached r{l}'s HW {prev.get('hw', l)}"
    else:
        why = f"its log differs there (record {lj[o][0]} of epoch {lj[o][1]})"
    text = f"r{j} joins the ISR although it lacks offset {o} (record {ll[o][0]}) of r{l}'s log: {why}"
    q = cur.get("q_leader")
    if q is not None and q != l and cur.has("q_leader"):
        text += (f"; the ISR write came from r{l}, a deposed leader ({_who(R, q)} leads epoch "
                 f"{cur.get('q_epoch')} in ZooKeeper)")
    return text + "."


def _committed_at(s):
    """{offset: record} committed in state s: acknowledged records and offsets shown to consumers."""
    out = {o: m for m, o in s.acked().items()}
    for o, m in s.exposed().items():
        out.setdefault(o, m)
    return out


def _detail(spec, invariant, states, R):
    last = states[-1]
    if invariant == "no-committed-loss":
        loss = _find_loss(states, R)
        if loss:
            m, o, l = loss
            return f"record {m}, acknowledged at offset {o}, is not in acting leader r{l}'s log."
    if invariant == "hw-monotonic":
        committed = len(last.exposed())
        for l in last.acting_leaders():
            if last.get("leo", l) < committed:
                return (f"acting leader r{l}'s log ends at offset {last.get('leo', l)}, below the committed "
                        f"HW {committed} consumers already saw.")
    if invariant == "consistent-reads":
        exposed = last.exposed()
        for r in range(R):
            if last.believes_leads(r):
                log = last.log(r)
                for o in range(last.get("hw", r) or 0):
                    if o < len(log) and o in exposed and log[o][0] != exposed[o]:
                        return (f"r{r} serves record {log[o][0]} at offset {o} below its HW, but consumers "
                                f"already read record {exposed[o]} there.")
    if invariant == "log-matching":
        for a in range(R):
            for b in range(a + 1, R):
                la, lb = last.log(a), last.log(b)
                for o in range(min(len(la), len(lb))):
                    if la[o][1] == lb[o][1] and la[:o + 1] != lb[:o + 1]:
                        bad = [p for p in range(o + 1) if la[p] != lb[p]]
                        return (f"r{a} and r{b} both hold epoch {la[o][1]} at offset {o} but their logs differ "
                                f"at offset{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))}.")
    if invariant in ("single-leader-per-epoch", "single-acting-leader"):
        leaders = [r for r in range(R) if last.believes_leads(r)]
        if len(leaders) > 1:
            epochs = ", ".join(f"r{r} on epoch {last.get('leader_epoch', r)}" for r in leaders)
            return f"{len(leaders)} replicas believe they lead: {epochs}."
    if invariant == "isr-keeps-healthy-followers":
        for l in range(R):
            for f in range(R):
                if f != l and last.get("healthy", l, f) and not last.get("isr", l, f):
                    return (f"leader r{l} dropped r{f} from its ISR although r{f} has fetched within every "
                            f"replica.lag.time.max.ms since it was last in sync.")
    if invariant == "leader-in-isr":
        return f"the leader in ZooKeeper, r{last.get('q_leader')}, is not in the ISR {_set(last.isr())}."
    if invariant == "strong-isr":
        for l in last.acting_leaders():
            ll = last.log(l)
            for i in last.isr():
                if i == l:
                    continue
                li = last.log(i)
                for o in range(last.get("hw", l) or 0):
                    if o < len(ll) and (o >= len(li) or li[o][0] != ll[o][0]):
                        return (f"ISR member r{i} lacks record {ll[o][0]} at offset {o}, below acting leader "
                                f"r{l}'s HW {last.get('hw', l)}.")
    return None



def _message(name, params, prev, cur, R):
    """(from, to, text) of one step."""
    def r(k):
        return f"r{params[k]}" if k in params else None
    p = params
    if name == "elect_leader":
        return "Controller", r("l"), f"elect r{p['l']} leader, epoch {cur.get('q_epoch')}, ISR {_isr(cur)}"
    if name == "controller_shrink_isr":
        return "Controller", "Controller", f"remove dead r{p['r']} from ISR, epoch {cur.get('q_epoch')}"
    if name == "controller_offline":
        return "Controller", "Controller", f"r{p['r']} dead, partition offline, epoch {cur.get('q_epoch')}"
    if name == "controller_failover":
        return "Controller", "Controller", f"controller failover (in-flight LeaderAndIsr electing r{p['l']})"
    if name in ("apply_leader_and_isr", "apply_stale_leader_and_isr"):
        leader = cur.get("leader", p["r"])
        role = "leader" if leader == p["r"] else ("no leader" if leader is None or leader >= R
                                                   else f"follow r{leader}")
        e = p.get("e", cur.get("leader_epoch", p["r"]))
        return "Controller", r("r"), f"LeaderAndIsr epoch {e} applied: {role}"
    if name == "produce":
        o = prev.get("leo", p["l"])
        return "Producer", r("l"), f"produce record {cur.get('log_record', p['l'], o)} at offset {o}"
    if name in ("fetch", "fetch_response_lost"):
        f = p["f"]
        got = f"LEO {prev.get('leo', f)}→{cur.get('leo', f)}, HW {cur.get('hw', f)}"
        if name == "fetch_response_lost":
            got = "response lost"
        return r("f"), r("l"), f"Fetch(offset {prev.get('leo', f)}): {got}"
    if name == "truncate_by_epoch":
        f = p["f"]
        return r("f"), r("l"), f"OffsetsForLeaderEpoch: truncate {prev.get('leo', f)}→{cur.get('leo', f)}"
    if name == "shrink_isr":
        return r("l"), "Controller", f"shrink ISR: drop r{p['f']}"
    if name in ("lag_expires", "catch_up_lapses"):
        what = "no fetch" if name == "lag_expires" else "no fetch from the log end"
        return r("l"), r("l"), f"replica.lag.time.max.ms: {what} from r{p['f']}"
    if name == "fetcher_stops":
        return r("f"), r("f"), "fetcher stops"
    if name == "alter_isr":
        return r("l"), "Controller", "AlterIsr"
    if name == "crash":
        return r("r"), r("r"), f"crash (HW from checkpoint: {cur.get('hw', p['r'])})"
    if name in ("shutdown", "restart", "flush"):
        return r("r"), r("r"), name
    if name == "restart_unnoticed":
        return r("r"), r("r"), "restart (unnoticed by the controller)"
    if name == "exit_out_of_range":
        return r("f"), r("f"), "OffsetOutOfRange: exit"
    if name == "checkpoint_hw":
        return r("r"), r("r"), f"checkpoint HW {cur.get('checkpoint_hw', p['r'])}"
    if name in ("start_reassignment", "resume_reassignment", "complete_reassignment"):
        return "Controller", "Controller", f"{name.replace('_', ' ')}, epoch {cur.get('q_epoch')}"
    if name == "apply_stop_replica":
        return "Controller", r("r"), "StopReplica (delete) applied"
    who = next((f"r{v}" for k, v in p.items() if isinstance(v, int) and 0 <= v < R), "Controller")
    return who, who, f"{name}({', '.join(f'{k}={v}' for k, v in p.items())})"


def _isr(s):
    return "{" + ",".join(f"r{i}" for i in s.isr()) + "}"


def _state_label(s, R):
    lines = []
    for r in range(R):
        log = " ".join(f"{o}:{rec}@{ep}" for o, (rec, ep) in enumerate(s.log(r))) or "-"    # as in show
        role = "L" if s.believes_leads(r) else ("F" if s.get("leader", r) is not None and s.get("leader", r) < R
                                                else "-")
        up = "" if s.get("up", r, default=True) else " DOWN"
        lines.append(f"r{r} {role} e{s.get('leader_epoch', r)} [{log}] leo={s.get('leo', r)} hw={s.get('hw', r)}{up}")
    if s.has("q_leader"):
        q = s.get("q_leader")
        replicas = f" replicas={_replica_set(s, 'q_replicas')}" if s.has("q_replicas") else ""
        lines.append(f"ZK: leader={'-' if q is None or q >= R else f'r{q}'} epoch={s.get('q_epoch')} "
                     f"ISR={_isr(s)}{replicas}")
    acked = s.acked()
    if acked:
        lines.append("acked (offset:record): " + ", ".join(f"{o}:{m}" for m, o in sorted(acked.items())))
    return "\n".join(lines)



class KafkaPresentation(Presentation):
    """Traces of the Kafka model in Kafka terms (see the module doc)."""

    narrated = frozenset({"elect_leader", "controller_shrink_isr", "controller_offline", "controller_failover",
                          "apply_leader_and_isr", "apply_stale_leader_and_isr", "produce", "fetch",
                          "fetch_response_lost", "truncate_by_epoch", "shrink_isr", "alter_isr", "flush",
                          "checkpoint_hw", "crash", "shutdown", "restart", "restart_unnoticed",
                          "exit_out_of_range", "lag_expires", "catch_up_lapses", "fetcher_stops",
                          *REASSIGNMENT_STEPS})
    columns = {"leo": "LEO", "hw": "HW", "leader": "leader", "leader_epoch": "epoch", "isr": "ISR", "up": "up"}
    hidden = ("log_record", "log_epoch")
    partition_prefixes = ("q_",)          # the quorum state (ZooKeeper) is partition-wide
    log_header = "log (offset:record@epoch)"
    #: steps whose sentence says the new ISR in ZooKeeper itself
    isr_said = frozenset({"elect_leader", "controller_shrink_isr", "controller_offline"})
    log_fields = ("log_record", "log_epoch", "leo")
    participants = ("Controller", "Producer")
    replica_params = ("r", "l", "f")

    def phrase(self, prev, cur, name, params):
        """The sentence of one step (a family built on this one narrates its own actions here)."""
        return _action_phrase(prev, cur, name, params, halts=self.spec.out_of_range_halts)

    def truncation(self, prev, cur, name, params, r):
        """Why r's log got shorter in this step, and the protocol rule that allowed it."""
        return truncation_rule(prev, cur, name, params, r)

    def lost(self, trace, invariant=None):
        """The acknowledged record missing from the final acting leader (no-committed-loss, hw-monotonic)."""
        invariant, steps = self.steps(trace, invariant)
        if not steps or invariant not in (None, "no-committed-loss", "hw-monotonic"):
            return None
        loss = _find_loss([_S(st, self.R) for _, _, st in steps], self.R)
        return loss[:2] if loss else None

    def explain(self, trace, invariant=None):
        """Per-step sentences and marks (see the module doc)."""
        invariant, steps = self.steps(trace, invariant)
        if not steps:
            return []
        spec, R = self.spec, self.R
        states = [_S(st, R) for _, _, st in steps]
        lines = []
        loss = _find_loss(states, R) if invariant in (None, "no-committed-loss", "hw-monotonic") else None
        diverged_once = False
        lost_seen = set()
        for i, (name, params, _) in enumerate(steps):
            prev = states[i - 1] if i else None
            cur = states[i]
            phrase = self.phrase(prev or cur, cur, name, params)
            if name == "shrink_isr" and getattr(spec, "lag_rule", None) and prev is not None:
                phrase = phrase[:-1] + ": " + _shrink_reason(spec, states, steps, i) + "."
            if prev is None:
                lines.append(Line(i, phrase))
                continue
            marks = []
            # committed records leaving a log
            committed = _committed_at(prev)
            for r in range(R):
                old, new = prev.log(r), cur.log(r)
                for o, m in sorted(committed.items()):
                    gone = o < len(old) and old[o][0] == m and (o >= len(new) or new[o][0] != m)
                    if gone and (r, m) not in lost_seen:
                        lost_seen.add((r, m))
                        what = "acknowledged" if m in prev.acked() else "consumer-visible"
                        marks.append((r, Line(i, f"Committed record {m} ({what}, offset {o}) disappears from r{r}: "
                                                 f"{self.truncation(prev, cur, name, params, r)}.", "lost")))
            extra = _changes(prev, cur, name, params, {r for r, _ in marks}, self.truncation, self.isr_said)
            if extra:
                phrase = phrase[:-1] + "; " + "; ".join(extra) + "."
            lines.append(Line(i, phrase))
            # acknowledgements
            for m, o in sorted(cur.acked().items()):
                if m not in prev.acked():
                    lines.append(Line(i, _ack_sentence(spec, prev, cur, name, params, m, o), "acked"))
            lines += [line for _, line in marks]
            # a replica joining the ISR without all of the leader's log
            for j in cur.isr():
                if j not in prev.isr():
                    text = _join_sentence(prev, cur, j, params)
                    if text:
                        lines.append(Line(i, text, "isr"))
            # a leader without a committed record
            if loss is not None:
                m, o, l = loss
                log = cur.log(l)
                if i == _became_acting(states, l) and cur.acked().get(m) == o and (o >= len(log) or log[o][0] != m):
                    had = [r for r in range(R) if o < len(cur.log(r)) and cur.log(r)[o][0] == m]
                    lines.append(Line(i, f"r{l} becomes the acting leader (epoch {cur.get('leader_epoch', l)}) "
                                         f"without committed record {m} at offset {o}"
                                         + (f"; only {_set(had)} still hold{'s' if len(had) == 1 else ''} it."
                                            if had else "; no replica holds it any more."), "leader"))
            # divergence
            if not diverged_once:
                d = _divergence(prev, cur, R)
                if d is not None:
                    a, b, o = d
                    ra, rb = cur.log(a)[o], cur.log(b)[o]
                    lines.append(Line(i, f"The logs of r{a} and r{b} diverge at offset {o}: r{a} has record {ra[0]} "
                                         f"(epoch {ra[1]}), r{b} has record {rb[0]} (epoch {rb[1]}).", "diverged"))
                    diverged_once = True
        return lines + self.violation(steps, invariant)

    def detail(self, invariant, states):
        return _detail(self.spec, invariant, [_S(st, self.R) for st in states], self.R)

    def summary(self, trace, invariant=None):
        """One line: which invariant broke after how many steps, and which record was lost or which offsets
        diverged."""
        invariant, steps = self.steps(trace, invariant)
        if steps and invariant == "no-committed-loss":
            states = [_S(st, self.R) for _, _, st in steps]
            loss = _find_loss(states, self.R)
            if loss:
                n = len(steps) - 1
                m, o, l = loss
                acked = _first_step(states, lambda s: s.acked().get(m) == o)
                gone = None
                for i in range(n, 0, -1):
                    log_prev, log_cur = states[i - 1].log(l), states[i].log(l)
                    if o < len(log_prev) and log_prev[o][0] == m and (o >= len(log_cur) or log_cur[o][0] != m):
                        gone = i
                        break
                where = (f"r{l} truncated it at step {gone}" if gone is not None
                         else f"r{l} never had it")
                return (f"{invariant} violated after {n} step{'s' if n != 1 else ''}: record {m}, acknowledged "
                        f"at step {acked} at offset {o}, is missing from acting leader r{l} ({where}).")
        return super().summary(trace, invariant)

    def consequence(self, invariant):
        """What a violation of ``invariant`` means for users, worded for the spec's bounds.

        The invariants' documentation speaks of the default producer, acks=all; a
        spec whose producer uses acks=1 (``acks_all`` 0) had its records
        acknowledged on the leader's append instead, and the text says so.
        """
        text = super().consequence(invariant)
        if not self.spec.acks_all:
            text = text.replace("(acks=all)", "(acks=1: as soon as the leader appended it)")
        return text

    def epilogue(self):
        fence = self.spec.missing_fence
        return [("missing fence", fence)] if fence else []

    def message(self, name, params, prev, cur):
        return _message(name, params, _S(prev, self.R), _S(cur, self.R), self.R)

    def state_label(self, state):
        return _state_label(_S(state, self.R), self.R)
