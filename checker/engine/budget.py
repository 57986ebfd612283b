"""What a run may spend: one budget type every engine takes.

The command line builds one :class:`Budget` from its options (and the settings file, which only
changes their defaults) and hands it to the engine; an engine reads the fields it knows and leaves the
others alone. ``None`` is "no limit". A run that hits a limit stops with a partial result whose
``budget_hit`` names the limit (exit code 3).

- ``max_states``: distinct states an exhaustive search may enumerate (exhaustive, Spark, liveness, the
  reachable states lemma learning starts from);
- ``max_depth``: levels of the state graph an exhaustive search may explore, the initial state being level 1;
- ``seconds``: wall-clock seconds of the whole run (a search, a BMC run, a proof, a fuzzing campaign);
- ``max_steps``: fuzz: the longest execution, in steps;
- ``max_runs``: fuzz: executions (examples) to run at most.

Memory is not a field: ``--max-memory`` is a stop request (checker/engine/stop.py) that every engine polls, as it
polls SIGINT and SIGTERM.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Budget:
    max_states: int | None = None
    max_depth: int | None = None
    seconds: float | None = None
    max_steps: int | None = None
    max_runs: int | None = None

    def __post_init__(self):
        for name in ("max_states", "max_depth", "max_steps", "max_runs"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"budget {name}: a positive integer or None, not {value!r}")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"budget seconds: a positive number or None, not {self.seconds!r}")

    def left(self, elapsed):
        """This budget for what follows after ``elapsed`` seconds of it were spent (never below a millisecond)."""
        if self.seconds is None:
            return self
        return replace(self, seconds=max(self.seconds - elapsed, 0.001))

    def as_json(self):
        """The limits that are set, by field name."""
        return {k: v for k, v in vars(self).items() if v is not None}


UNLIMITED = Budget()
