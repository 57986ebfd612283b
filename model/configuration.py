"""Named configurations of a spec: expected verdicts at bounds other than its defaults.

A known bug often shows only at bounds larger than a spec's defaults (KAFKA-6361 needs a third record
in kip-101), so a spec declares, besides its ``expected`` verdicts at the defaults, named
configurations::

    class Kip101(KafkaReplication):
        configurations = {
            "kafka-6361": Configuration(bounds={"max_records": 3}, expected={"log-matching": "violated"},
                                        why={"log-matching": "KAFKA-6361: ..."}),
        }

``bounds`` override the spec's ``defaults``; ``expected`` gives the verdict of some of its invariants
there, ``liveness`` of some of its liveness properties (a lasso is saved for a violated one, as at the
defaults); ``why`` gives the reason (a ticket or KIP) of every expected violation, and may explain a
``holds`` too (a fix holding where the bug shows). The defaults are the configuration named
``defaults``, whose expectations are the spec's ``expected``, ``expected_why`` and ``liveness_expected()``.

Configurations and ``not_modelled`` (ticket -> why the model cannot express it) belong to the class
that declares them: a subclass changes the protocol, so it inherits neither unless it says so
(``configurations = {**Parent.configurations, ...}``). Both are checked when the class is created
(:func:`validate`); a mistake raises DeclarationError naming the spec and the configuration.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from isrcheck.model.expr import DeclarationError
from isrcheck.model.near_miss import distance

VERDICTS = ("holds", "violated")
DEFAULTS = "defaults"
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*$")
_TICKET = re.compile(r"\b(?:KAFKA|KIP)-\d+\b")
_SCENARIOS = re.compile(r"\b(KIP-\d+)\s*\(scenarios?\s+([\d ,and]+)\)")


@dataclass(frozen=True)
class Configuration:
    """Bounds (overrides of the spec's defaults) and the verdicts expected there, with their reasons."""
    bounds: dict = field(default_factory=dict)
    expected: dict = field(default_factory=dict)
    why: dict = field(default_factory=dict)
    liveness: dict = field(default_factory=dict)


def configurations(cls):
    """Every configuration of a spec class by name, ``defaults`` first."""
    live, live_why = cls.liveness_expected()
    return {DEFAULTS: Configuration({}, dict(cls.expected), {**cls.expected_why, **live_why}, dict(live)),
            **cls.configurations}


def configuration_of(cls, bounds):
    """(name, Configuration) of the spec's configuration whose bounds are exactly ``bounds``, or (None, None)."""
    return next(((name, c) for name, c in configurations(cls).items() if {**cls.defaults, **c.bounds} == dict(bounds)),
                (None, None))


def validate(cls):
    """Check a spec class's configurations and ``not_modelled`` (DeclarationError naming what is wrong)."""
    where = f"spec {cls.name or cls.__name__}"
    invariants = {fn.__isrcheck_invariant__ for _, fn in cls._members("__isrcheck_invariant__")}
    properties = set(cls.declared_properties())
    if not isinstance(cls.configurations, dict):
        raise DeclarationError(f"{where}: configurations must be a dict of name -> Configuration")
    for name, conf in cls.configurations.items():
        here = f"{where}, configuration {name!r}"
        if not isinstance(name, str) or not _NAME.match(name) or name == DEFAULTS:
            raise DeclarationError(f"{here}: the name must be kebab-case (a-z, 0-9, '-') and not {DEFAULTS!r}")
        if not isinstance(conf, Configuration):
            raise DeclarationError(f"{here}: must be a Configuration(bounds=..., expected=..., why=...)")
        for part in ("bounds", "expected", "why", "liveness"):
            if not isinstance(getattr(conf, part), dict):
                raise DeclarationError(f"{here}: {part} must be a dict")
        for bound, value in conf.bounds.items():
            if bound not in cls.defaults:
                raise DeclarationError(f"{here}: unknown bound {bound!r} (known: {', '.join(cls.defaults)})")
            lo, hi = cls.limits.get(bound, (None, None))
            if type(value) is not int or (lo is not None and not lo <= value <= hi):
                raise DeclarationError(f"{here}: bound {bound}={value!r} must be an integer"
                                       + (f" in {lo}..{hi}" if lo is not None else ""))
        if not conf.expected and not conf.liveness:
            raise DeclarationError(f"{here}: expects nothing (give at least one invariant's verdict)")
        for part, names, kind in (("expected", invariants, "invariant"), ("liveness", properties, "liveness property")):
            for inv, verdict in getattr(conf, part).items():
                if inv not in names:
                    raise DeclarationError(f"{here}: no {kind} {inv!r} (it has: {', '.join(sorted(names))})")
                if verdict not in VERDICTS:
                    raise DeclarationError(f"{here}: verdict of {inv!r} is {verdict!r} (must be 'holds' or "
                                           f"'violated')")
                if verdict == "violated" and not str(conf.why.get(inv, "")).strip():
                    raise DeclarationError(f"{here}: {inv!r} is expected violated without a reason in why "
                                           f"(the ticket or KIP it reproduces)")
        for inv in conf.why:
            if inv not in conf.expected and inv not in conf.liveness:
                raise DeclarationError(f"{here}: why explains {inv!r}, which it expects nothing of")
    if not isinstance(cls.not_modelled, dict) or not all(
            isinstance(v, str) and v.strip() for v in cls.not_modelled.values()):
        raise DeclarationError(f"{where}: not_modelled must map each ticket to a sentence saying why")


def validate_expected(cls):
    """Check that ``expected`` names invariants of the class and ``expected_liveness`` its liveness properties, with
    verdicts 'holds' or 'violated' (DeclarationError naming the key): a misspelt key would be an expectation no
    check and no gate ever compares."""
    for attr, marker, kind in (("expected", "__isrcheck_invariant__", "invariants"),
                               ("expected_liveness", "__isrcheck_leads_to__", "liveness properties")):
        names = {fn.__isrcheck_invariant__ if kind == "invariants" else fn.__isrcheck_leads_to__[0]
                 for _, fn in cls._members(marker)}
        stated = cls.expected if attr == "expected" else cls.liveness_expected()[0]
        for key, verdict in stated.items():
            if key not in names:
                close = min(names, key=lambda n: distance(key, n, 3), default=None)
                hint = (f"did you mean {close!r}?" if close and distance(key, close, 3) <= 3
                        else ", ".join(sorted(names)) or "none")
                raise DeclarationError(f"{cls.__name__}.{attr} names {key!r}, which is not one of its {kind} "
                                       f"({hint})")
            if verdict not in VERDICTS:
                raise DeclarationError(f"{cls.__name__}.{attr}: the verdict of {key!r} is {verdict!r} (must be "
                                       f"'holds' or 'violated')")


def cited(cls):
    """The tickets and KIPs a spec's ``references`` cite: KAFKA-n, KIP-n, and "KIP-n scenario k" for each
    scenario named as in ``KIP-101 (scenarios 1 and 2)``."""
    out = []
    for ref in cls.references:
        out += _TICKET.findall(ref)
        for kip, numbers in _SCENARIOS.findall(ref):
            out += [f"{kip} scenario {k}" for k in re.findall(r"\d+", numbers)]
    return list(dict.fromkeys(out))


def unaccounted(cls):
    """What the references cite that no configuration reproduces and ``not_modelled`` does not explain.

    A citation is accounted for by a configuration named after it, by the reason (``why``) of one of a
    configuration's expectations (an invariant's or a liveness property's) naming it, by ``not_modelled``, or, for
    the KIP or ticket the spec is named after, by the spec itself (kip-320 and tla-kip320 are KIP-320 at their
    defaults).
    """
    own = [f"{word}-{number}" for word, number in re.findall(r"(KIP|KAFKA)-?(\d+)", cls.name.upper())]
    texts = [name.upper() for name in configurations(cls)] + own + list(cls.not_modelled)
    texts += [str(why) for conf in configurations(cls).values() for why in conf.why.values()]
    text = "\n".join(texts).upper()
    return [c for c in cited(cls) if not re.search(rf"\b{re.escape(c.upper())}\b", text)]
