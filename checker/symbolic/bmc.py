"""Bounded model checking: is a state violating an invariant reachable in at most ``depth`` states?

One SAT solver (checker/symbolic/cnf.py) grows the unrolling level by level, keeping its learnt clauses, and
asks for a violation under an assumption literal. Levels are checked in order, so the first violation
found for an invariant is a shortest one (the same number of states as the exhaustive engine's
trace). The model is decoded into action ids, replayed on the scalar backend, and returned as a
:class:`checker.engine.result.Result` (engine "bmc") with ordinary steps, so traces save, replay and show exactly like
the exhaustive engine's.

Cost: BMC is exponential in depth on these interleaving models. Proving that no violation exists at
level d means refuting every interleaving of d-1 actions; each level costs about 1.5-2x the previous
one, while the exhaustive engine's distinct states only double. Use BMC as an independent
cross-check and for shallow bugs in state spaces too large to enumerate. Adjacent-step partial-order
reduction (forbidding an action after a later-numbered one it commutes with) was measured and
dropped: it cut the solver's work on some levels and added to it on others, and the commutation
check costs seconds per spec.
"""
from __future__ import annotations

import time

from pysat.solvers import Solver as SatSolver

from isrcheck.checker.engine import stop
from isrcheck.checker.exhaustive.bfs import peak_memory
from isrcheck.checker.engine.budget import UNLIMITED
from isrcheck.checker.engine.result import Result, Violation
from isrcheck.checker.symbolic.cnf import CnfUnrolling, room_check, sat_check
from isrcheck.checker.symbolic.unrolling import Stopped, Z3Unknown
from isrcheck.model import backends


def bmc(spec, invariants, depth, budget=UNLIMITED, progress=None, on_violation=None):
    """Bounded model checking of the named invariants on paths of up to ``depth`` states.

    Levels are checked in order 1, 2, ..., depth (level d: paths of d states from
    the initial state), so an invariant's violation is reported at its smallest
    level, with a trace of that many states; once every invariant is violated
    the search stops. One incremental SAT solver holds the unrolling
    (:class:`CnfUnrolling`): each level adds a step and asks, under an assumption,
    for a path whose last state violates a pending invariant. ``budget.seconds``
    bounds the whole run (the solver's time: z3 and SAT); when it runs out the result has ``z3_unknown`` and
    ``budget_hit`` set and ``depth`` is the last level fully checked.
    ``progress(depth=, seconds=)`` is called after each level,
    ``on_violation(violation)`` for each violation as soon as its level is checked.
    A stop request (:mod:`checker.engine.stop`) ends the run like the time limit.
    """
    if depth < 1:
        raise ValueError("bmc depth must be at least 1")
    start = time.perf_counter()
    deadline = None if budget.seconds is None else start + budget.seconds
    invs = [spec.invariants[name] for name in invariants]
    pending = list(invs)
    violations = {}
    u = CnfUnrolling(spec, invs)
    done, unknown, hit, level_seconds = 0, None, None, []
    with SatSolver(name="cadical195") as solver:
        solver.append_formula(u.initial())
        try:
            for level in range(1, depth + 1):
                room_check()                # the level's clauses go into CaDiCaL next
                last = level - 1
                if last > 0:
                    solver.append_formula(u.transition(last - 1))
                clauses, holds = u.holds(last)
                solver.append_formula(clauses)
                _check_level(u, solver, holds, level, pending, violations, deadline)
                for v in violations.values():
                    if on_violation is not None and v.level == level:
                        on_violation(v)
                done = level
                level_seconds.append(time.perf_counter() - start)
                if progress is not None:
                    progress(depth=level, seconds=time.perf_counter() - start)
                if not pending:
                    break
        except Stopped as e:              # stop cleanly: the violations found so far are reported and saved
            unknown = hit = e.reason
        except Z3Unknown as e:
            unknown = e.reason
        except KeyboardInterrupt:         # Ctrl-C where no stop handler is installed (a library caller)
            unknown = hit = "Ctrl-C"
        except MemoryError:
            unknown = hit = stop.out_of_memory()
    if unknown is not None:
        hit = hit or f"z3 time limit {budget.seconds:g}s"
    elif pending:
        hit = f"bmc depth {depth}"     # a noun phrase: the CLI prints "stopped by <budget_hit>"
    return Result(
        invariants=[i.name for i in invs], violations=violations, distinct_states=None, transitions=None,
        depth=done, seconds=time.perf_counter() - start, peak_memory_bytes=peak_memory(), retained_bytes=None,
        complete=False, budget_hit=hit, never_fired=None, engine="bmc", z3_unknown=unknown,
        level_seconds=level_seconds, bits=int(u.start[-1]))


def _check_level(u, solver, holds, level, pending, violations, deadline):
    """Find every pending invariant violated at ``level`` (a path of that many states).

    One query asks for a path violating any of them; each model found removes
    the invariants it violates, until no path violates any that remain. Those
    hold at this level and are added as facts for deeper levels (every state
    here satisfies them, so this is sound).
    """
    while pending:
        flag = int(u.new_variables(1)[0])
        solver.add_clause([-flag] + [-int(holds[inv.name]) for inv in pending])
        if not sat_check(solver, [flag], deadline):
            solver.add_clause([-flag])
            for inv in pending:
                solver.add_clause([int(holds[inv.name])])
            return
        model = u.model(solver)
        steps = u.replay(model, level)
        before = len(pending)
        for inv in list(pending):
            if model[holds[inv.name] - 1] < 0:
                if backends.scalar(u.spec).holds(steps[-1][1], inv):
                    raise RuntimeError(f"internal error: {inv.name} holds on replay of the SAT counterexample")
                violations[inv.name] = Violation(inv.name, None, level, steps)
                pending.remove(inv)
        if len(pending) == before:
            raise RuntimeError("internal error: the SAT solver found a violating path but no invariant fails in it")
