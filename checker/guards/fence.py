"""Loading a user's code (a spec file, a module, a plugin's entry point): whatever it raises is one line.

A module a team wrote can raise anything while it is imported: an error, ``SystemExit`` (a script's
``sys.exit(main())`` at the bottom, ``raise SystemExit("bye")``), ``KeyboardInterrupt``,
``GeneratorExit``. None of it may end isrcheck with the module's own exit code: a gate that exits 0
having checked nothing, or 1 ("a violation") for ``SystemExit("bye")``. :func:`call` turns every
BaseException into a :class:`UserCodeError` (exit 2 on the command line), except two that are not
the module's to decide:

- a KeyboardInterrupt that a signal caused (:mod:`checker.engine.stop` recorded the signal): the run stops, exit 3;
- a MemoryError: the machine's limit, not the module's fault, exit 3 as anywhere else.

While the user's code runs, SIGINT and SIGTERM interrupt it at once, even in a command whose work
polls for stops, so a module that hangs while it is imported can still be stopped.
"""
from __future__ import annotations

from isrcheck.checker.engine import stop


class UserCodeError(ValueError):
    """A user's module that cannot be loaded (one line, exit code 2)."""


def describe(e):
    """What a user's module raised, in one line."""
    if isinstance(e, SystemExit):
        return f"SystemExit({e.code!r}): the module exits while it is imported"
    return f"{type(e).__name__}: {e}".rstrip(": ")


def call(what, fn, *args):
    """``fn(*args)``, which runs a user's code; anything it raises is a UserCodeError ``what: ...`` (see the
    module doc for the two exceptions that pass)."""
    try:
        with stop.immediate():
            return fn(*args)
    except MemoryError:
        raise
    except KeyboardInterrupt as e:
        if stop.real_interrupt():
            raise
        raise UserCodeError(f"{what}: {describe(e)}") from None
    except BaseException as e:  # noqa: BLE001 — the user's code: SystemExit included
        raise UserCodeError(f"{what}: {describe(e)}") from None
