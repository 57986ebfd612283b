"""Every protocol version meets its declared verdicts at its default bounds (Kafka's history as tests)."""
import pytest

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.specs import SPECS

BASE = ["hw-truncation", "kip-101", "kip-279", "kip-320"]


@pytest.mark.parametrize("name", BASE)
def test_default_bounds_meet_expected_verdicts(name):
    spec = SPECS[name]()
    assert set(spec.expected) == set(spec.invariants), "every invariant needs an expected verdict"
    result = search(spec, list(spec.invariants))
    assert result.complete
    assert result.verdicts == spec.expected
    assert result.never_fired == []
