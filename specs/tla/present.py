"""The TLA family's presentation: traces of the ports of hachikuji/kafka-specification, in its terms.

Each replica's row shows its log as offset:id@epoch up to its end offset, then
LEO, HW, the leader it believes in, its leader epoch (-1: Nil) and its ISR; the
quorum state and the LeaderAndIsr requests follow. Every action of every
version is narrated here (``narrated``), each sentence naming the TLA+ action
it ports (the first word of the action's docstring).
"""
from __future__ import annotations

from isrcheck.model.present import Presentation


def _set(flags):
    return "{" + ",".join(f"r{i}" for i, b in enumerate(flags) if b) + "}"


class TlaPresentation(Presentation):
    """Traces of the TLA+ ports (see the module doc)."""

    #: action name -> what kind of step it is (the sentence is written per kind)
    KINDS = {
        "controller_shrink_isr": "controller_shrink", "controller_elect_leader": "elect",
        "become_leader": "become_leader", "leader_write": "write",
        "leader_shrink_isr": "shrink", "fenced_leader_shrink_isr": "shrink",
        "leader_shrink_isr_better_fencing": "shrink",
        "leader_expand_isr": "expand", "fenced_leader_expand_isr": "expand",
        "leader_expand_isr_better_fencing": "expand",
        "leader_inc_high_watermark": "inc_hw", "fenced_leader_inc_high_watermark": "inc_hw",
        "improved_leader_inc_high_watermark": "inc_hw",
        "follower_replicate": "replicate", "fenced_follower_fetch": "replicate", "follower_fetch": "replicate",
        "follower_truncate": "truncate",
        "become_follower": "become_follower", "become_follower_truncate_kip101": "become_follower",
        "become_follower_truncate_kip279": "become_follower",
        "fenced_become_follower_and_truncate": "become_follower",
        "become_follower_truncate_to_high_watermark": "become_follower",
    }
    narrated = frozenset(KINDS)
    columns = {"log_end_offset": "LEO", "hw": "HW", "leader": "leader", "leader_epoch": "epoch", "isr": "ISR"}
    hidden = ("log_id", "log_epoch")
    partition_prefixes = ("q_",)          # quorumState is partition-wide
    log_header = "log (offset:id@epoch)"
    log_fields = ("log_id", "log_epoch", "log_end_offset")
    participants = ("Controller", "Producer")
    replica_params = ("r", "l", "f")

    def _tla_name(self, name):
        """The TLA+ action an action ports: the first word of its docstring (``BecomeLeader: ...``)."""
        doc = (getattr(type(self.spec), name).__doc__ or "").strip()
        return doc.split(":", 1)[0] if ":" in doc else name

    def _who(self, r):
        return "None" if r >= self.R else f"r{r}"

    def phrase(self, prev, cur, name, params):
        if prev is None:
            return (f"Initial state: {self.R} replicas with empty logs, no leader and leader epoch Nil; the quorum "
                    f"has no leader and ISR {_set(cur['q_isr'])}.")
        p, kind = params, self.KINDS.get(name)
        if kind is None:
            return super().phrase(prev, cur, name, params)
        member = p.get("r", p.get("f"))
        if kind == "controller_shrink":
            text = (f"The controller takes r{p['r']} out of the ISR: epoch {cur['q_leader_epoch']}, leader "
                    f"{self._who(cur['q_leader'])}, ISR {_set(cur['q_isr'])}")
        elif kind == "elect":
            text = (f"The controller elects r{p['l']} leader for epoch {cur['q_leader_epoch']}, "
                    f"ISR {_set(cur['q_isr'])}")
        elif kind == "become_leader":
            text = (f"r{p['l']} applies the LeaderAndIsr of epoch {p['e']}: becomes leader with ISR "
                    f"{_set(cur['isr'][p['l']])}")
        elif kind == "write":
            r = p["r"]
            o = prev["log_end_offset"][r]
            text = (f"r{r}, presuming it leads, appends record {cur['log_id'][r][o]} at offset {o} "
                    f"(epoch {cur['log_epoch'][r][o]})")
        elif kind in ("shrink", "expand"):
            verb = "drops" if kind == "shrink" else "adds"
            text = (f"Leader r{p['l']} {verb} r{member} {'from' if kind == 'shrink' else 'to'} the ISR: "
                    f"the quorum's ISR is now {_set(cur['q_isr'])}")
        elif kind == "inc_hw":
            l = p["l"]
            text = f"Leader r{l} advances its HW {prev['hw'][l]}→{cur['hw'][l]}"
        elif kind == "replicate":
            f, l = p["f"], p["l"]
            o = prev["log_end_offset"][f]
            text = (f"r{f} copies offset {o} (record {cur['log_id'][f][o]}, epoch {cur['log_epoch'][f][o]}) from "
                    f"r{l}, its HW now {cur['hw'][f]}")
        elif kind == "truncate":
            f = p["f"]
            text = f"r{f} truncates its log to offset {cur['log_end_offset'][f]} against leader r{p['l']}"
        else:                               # become_follower
            r = p["r"]
            a, b = prev["log_end_offset"][r], cur["log_end_offset"][r]
            cut = f", truncating its log {a}→{b}" if b < a else ""
            text = f"r{r} applies the LeaderAndIsr of epoch {p['e']}: follows r{p['l']}{cut}, HW {cur['hw'][r]}"
        return f"{text} ({self._tla_name(name)})."

    def detail(self, invariant, states):
        last = states[-1]
        if invariant == "leader-in-isr":
            return (f"the quorum's leader, {self._who(last['q_leader'])}, is not in the quorum's ISR "
                    f"{_set(last['q_isr'])}.")
        if invariant not in ("weak-isr", "strong-isr"):
            return None
        for l in range(self.R):
            if last["leader"][l] != l:
                continue
            isr = last["isr"][l] if invariant == "weak-isr" else last["q_isr"]
            for m in (i for i in range(self.R) if isr[i]):
                for o in range(last["hw"][l]):
                    entry = [(last["log_id"][r][o], last["log_epoch"][r][o]) if o < last["log_end_offset"][r]
                             else None for r in (l, m)]
                    if entry[0] != entry[1]:
                        has = f"has {entry[1][0]}@{entry[1][1]}" if entry[1] else "has no record"
                        which = "its" if invariant == "weak-isr" else "the quorum's"
                        return (f"r{m}, in {which} ISR, {has} at offset {o}, where presumed leader r{l} has "
                                f"{entry[0][0]}@{entry[0][1]} below its HW {last['hw'][l]}.")
        return None

    def message(self, name, params, prev, cur):
        p, kind = params, self.KINDS.get(name)
        if kind is None:
            return super().message(name, params, prev, cur)
        text = self.phrase(prev, cur, name, params)
        if kind in ("controller_shrink", "elect"):
            return "Controller", ("Controller" if kind == "controller_shrink" else f"r{p['l']}"), text
        if kind in ("become_leader", "become_follower"):
            return "Controller", f"r{p.get('r', p.get('l'))}", text
        if kind == "write":
            return "Producer", f"r{p['r']}", text
        if kind in ("shrink", "expand"):
            return f"r{p['l']}", "Controller", text
        if kind in ("replicate", "truncate"):
            return f"r{p['f']}", f"r{p['l']}", text
        return f"r{p['l']}", f"r{p['l']}", text

    def state_label(self, state):
        lines = []
        for r in range(self.R):
            log = " ".join(f"{o}:{i}@{e}" for o, (i, e) in enumerate(zip(
                state["log_id"][r][:state["log_end_offset"][r]], state["log_epoch"][r]))) or "-"    # as in show
            role = "L" if state["leader"][r] == r else ("F" if state["leader"][r] < self.R else "-")
            lines.append(f"r{r} {role} e{state['leader_epoch'][r]} [{log}] leo={state['log_end_offset'][r]} "
                         f"hw={state['hw'][r]} isr={_set(state['isr'][r])}")
        lines.append(f"quorum: leader={self._who(state['q_leader'])} epoch={state['q_leader_epoch']} "
                     f"ISR={_set(state['q_isr'])}")
        return "\n".join(lines)
