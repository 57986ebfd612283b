"""The one budget type every engine takes (checker/engine/budget.py)."""
import pytest

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.engine.budget import UNLIMITED, Budget
from isrcheck.checker.exhaustive.liveness import check as check_liveness
from isrcheck.specs import SPECS


@pytest.mark.parametrize("limits", [dict(max_states=0), dict(max_depth=-1), dict(max_runs=True), dict(seconds=0),
                                    dict(max_steps=1.5)])
def test_a_limit_that_means_nothing_is_refused(limits):
    with pytest.raises(ValueError, match="budget"):
        Budget(**limits)


def test_what_is_left_keeps_the_other_limits():
    budget = Budget(max_states=10, seconds=5.0)
    assert budget.left(2.0) == Budget(max_states=10, seconds=3.0)
    assert budget.left(9.0).seconds == 0.001           # never zero: an engine given no time stops at once
    assert UNLIMITED.left(100.0) is UNLIMITED
    assert budget.as_json() == {"max_states": 10, "seconds": 5.0}


def test_the_exhaustive_search_and_liveness_read_the_same_limits():
    spec = SPECS["acks-1"]()
    cut = search(spec, ["no-committed-loss", "log-matching"], budget=Budget(max_depth=4))
    assert cut.budget_hit == "max depth 4" and cut.depth == 4 and not cut.complete
    live = check_liveness(spec, ["eventually-leader"], budget=Budget(max_depth=4))["eventually-leader"]
    assert live.budget_hit == "max depth 4" and live.verdict == "unknown"          # it holds at the defaults
    assert live.distinct_states == search(spec, [], budget=Budget(max_depth=4)).distinct_states
