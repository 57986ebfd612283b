"""The ISR lag rules (model/kafka.py ``lag_rule``, model/isr_lag.py): kafka-0.8.2, kafka-0.9, kafka-0.10.2.

Their verdicts at the defaults and in their configurations are the gate's (counterexamples/kafka-0.*). Here: what
``show`` says of a shrink, each rule's clock on a real run of the scalar backend, and the liveness case the message
rule alone misses.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from isrcheck.checker.exhaustive.liveness import check as check_liveness
from isrcheck.model import backends
from isrcheck.specs import SPECS
from isrcheck.specs.kafka_0_8_2 import Kafka082

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED = os.path.join(ROOT, "counterexamples")


def show(trace, cwd):
    r = subprocess.run(["isrcheck", "show", os.path.join(SAVED, trace)], capture_output=True, text=True, cwd=cwd,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return " ".join(r.stdout.split())


def run(spec, *steps):
    """The state after ``steps`` ((action, params), ...) from the initial one on the scalar backend (each enabled)."""
    row = backends.scalar(spec).initial_row()
    for name, params in steps:
        row = backends.scalar(spec).step(row, backends.action_named(spec, name, params))
        assert row is not None, f"{name}({params}) is disabled on {spec.name}"
    return row


def enabled(spec, row, name, params):
    return backends.scalar(spec).step(row, backends.action_named(spec, name, params)) is not None


ELECTED = (("elect_leader", {"l": 0}), ("apply_leader_and_isr", {"r": 0, "e": 1}),
           ("apply_leader_and_isr", {"r": 1, "e": 1}))


# --- show -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("trace, said", [
    ("kafka-0.8.2/isr-keeps-healthy-followers.itf.json",
     "Leader r0 drops r1 from the ISR: r1 is 2 messages behind (r0's LEO 2, r1's fetch offset 0), "
     "replica.lag.max.messages=1, though it fetched at the last step"),
    ("kafka-0.8.2/burst/isr-keeps-healthy-followers.itf.json",
     "r1 is 3 messages behind (r0's LEO 3, r1's fetch offset 0), replica.lag.max.messages=2, though it fetched at "
     "the last step"),
    ("kafka-0.9/isr-keeps-healthy-followers.itf.json",
     "r0 has not caught up within replica.lag.time.max.ms — r1 became leader at step 5 with the lastCaughtUpTimeMs "
     "it had kept of r0 from before"),
    ("kafka-0.9/kafka-4485/isr-keeps-healthy-followers.itf.json",
     "r1 has not caught up within replica.lag.time.max.ms — none of its fetches started at r0's log end"),
])
def test_show_says_why_the_leader_dropped_the_follower(trace, said, tmp_path):
    text = show(trace, tmp_path)
    assert said in text
    assert "isr-keeps-healthy-followers breaks here" in text


# --- each rule's clock ---------------------------------------------------------------------------------------------
def test_a_burst_makes_the_message_rule_drop_a_follower_that_fetched_it_all_and_the_time_rule_keeps_it():
    """Two appends with a fetch between: r1 holds both, r0 counts from r1's fetch offset 0 (2 > max 1)."""
    burst = ELECTED + (("produce", {"l": 0}), ("fetch", {"f": 1, "l": 0}), ("produce", {"l": 0}),
                       ("fetch", {"f": 1, "l": 0}))
    for name, drops in (("kafka-0.8.2", True), ("kafka-0.9", False), ("kafka-0.10.2", False)):
        spec = SPECS[name]()
        before_last_fetch = run(spec, *burst[:-1])
        assert enabled(spec, before_last_fetch, "shrink_isr", {"l": 0, "f": 1}) is drops, name
        s = spec.layout.decode(run(spec, *burst))
        assert s["leo"][1] == s["leo"][0] == 2 and s["remote_leo"][0][1] == 1 and s["healthy"][0][1]
        assert not enabled(spec, run(spec, *burst), "shrink_isr", {"l": 0, "f": 1}), name   # 1 behind: not slow


def test_only_0_10_2_counts_a_fetch_that_reaches_the_previous_fetchs_log_end():
    """r1, dropped and behind, fetches twice, each time one record short of r0's LEO: 0.10.2 counts the second
    fetch as caught up (it starts at r0's LEO of the first, KAFKA-4485), 0.9 counts neither."""
    steps = ELECTED + (("lag_expires", {"l": 0, "f": 1}), ("shrink_isr", {"l": 0, "f": 1}),
                       ("produce", {"l": 0}), ("fetch", {"f": 1, "l": 0}), ("produce", {"l": 0}),
                       ("fetch", {"f": 1, "l": 0}))
    for name, caught_up in (("kafka-0.9", False), ("kafka-0.10.2", True)):
        spec = SPECS[name]()
        after_first = spec.layout.decode(run(spec, *steps[:-2]))
        assert after_first["remote_leo"][0][1] == 0 < after_first["leo"][0] == 1
        assert not after_first["caught_up"][0][1], name       # the first fetch starts below r0's LEO: neither counts
        s = spec.layout.decode(run(spec, *steps))
        assert s["remote_leo"][0][1] == 1 < s["leo"][0] == 2
        assert s["caught_up"][0][1] is caught_up, name


def test_a_new_leader_keeps_stale_clocks_in_0_9_and_starts_them_afresh_in_0_10_2():
    """r1's clock of r0 runs out while r1 follows (0.9); r1 is then elected: 0.9 may drop r0 at once. 0.10.2 runs
    no clock of a follower's and a new leader starts its ISR members' afresh: it may not."""
    elected_twice = (("elect_leader", {"l": 0}), ("elect_leader", {"l": 1}), ("apply_leader_and_isr", {"r": 1, "e": 1}))
    took_over = ("apply_leader_and_isr", {"r": 1, "e": 2})
    spec = SPECS["kafka-0.9"]()
    row = run(spec, *elected_twice, ("lag_expires", {"l": 1, "f": 0}), took_over)
    assert spec.layout.decode(row)["healthy"][1][0] and enabled(spec, row, "shrink_isr", {"l": 1, "f": 0})
    spec = SPECS["kafka-0.10.2"]()
    assert not enabled(spec, run(spec, *elected_twice), "lag_expires", {"l": 1, "f": 0})
    row = run(spec, *elected_twice, took_over)
    assert spec.layout.decode(row)["healthy"][1][0] and not enabled(spec, row, "shrink_isr", {"l": 1, "f": 0})


# --- liveness: the case the message rule alone misses ------------------------------------------------------------
class MessageOnly(Kafka082):
    """0.8.2 without its stuck half: out of sync only when more than replica.lag.max.messages behind."""
    name = "message-only"

    def follower_out_of_sync(self, s, l, f):
        return (s.remote_leo[l][f] >= 0) & (s.leo[l] - s.remote_leo[l][f] > self.lag_max_messages)


def test_a_stopped_follower_leaves_the_isr_by_time_which_the_message_count_alone_misses():
    prop = "isr-drops-stuck-followers"
    assert check_liveness(SPECS["kafka-0.8.2"](max_epochs=1), [prop])[prop].verdict == "holds"
    result = check_liveness(MessageOnly(max_epochs=1), [prop])[prop]
    assert result.verdict == "violated"
    spec = MessageOnly(max_epochs=1)
    names = [inst.name for inst, _ in result.lasso.steps[1:]]
    assert "fetcher_stops" in names and "shrink_isr" not in names
    last = spec.layout.decode(result.lasso.steps[-1][1])
    assert last["stalled"][1] and last["isr"][0][1]
    behind = last["remote_leo"][0][1]
    assert behind == -1 or last["leo"][0] - behind <= spec.lag_max_messages    # never slow: unknown, or few behind
