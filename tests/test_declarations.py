"""Malformed declarations fail when the spec is loaded, naming the action; Layout encode/decode.

Each malformed spec below has a well-formed twin that differs only in the
mistake, and the twin must load: the error comes from that mistake, not from
the scaffolding around it.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from isrcheck.model.expr import DeclarationError, where
from isrcheck.model.layout import Field, Layout
from isrcheck.model.spec import Spec, action, invariant
from isrcheck.specs import SPECS
from isrcheck.specs.kip_320 import Kip320
from isrcheck.model import backends

SEED = 7


class Tiny(Spec):
    """A small well-formed spec the malformed ones extend."""

    name = "tiny"

    def configure(self, bounds):
        self.CELLS = range(3)

    def fields(self):
        return [Field("x", 0, 3), Field("y", 0, 3), Field("flag", 0, 1, boolean=True),
                Field("arr", 0, 3, (3,)), Field("ptr", 0, 3, doc="3: points nowhere")]

    @action(i="CELLS")
    def set_cell(self, s, i):
        s.require(s.arr[i] < 3)
        s.arr[i] = s.arr[i] + 1

    @invariant("small")
    def small(self, s):
        return s.x <= 3


def load_error(cls):
    with pytest.raises(DeclarationError) as info:
        cls()
    return str(info.value)


# ------------------------------------------------------------------------------------------
# Python control flow on a state value
# ------------------------------------------------------------------------------------------
class PythonIf(Tiny):
    @action(k="CELLS")
    def bump(self, s, k):
        if s.x < 3:                      # a state value in a Python `if`
            s.x = s.x + 1


class PythonIfFixed(Tiny):
    @action(k="CELLS")
    def bump(self, s, k):
        s.x = where(s.x < 3, s.x + 1, s.x)


class PythonAnd(Tiny):
    @action()
    def both(self, s):
        s.require(s.x > 0 and s.y > 0)
        s.flag = True


class PythonOr(Tiny):
    @action()
    def either(self, s):
        s.require(s.x > 0 or s.y > 0)
        s.flag = True


class PythonNot(Tiny):
    @action()
    def negate(self, s):
        s.require(not s.flag)
        s.flag = True


class ConnectivesFixed(Tiny):
    @action()
    def both(self, s):
        s.require((s.x > 0) & (s.y > 0) & ~s.flag)
        s.flag = True

    @action()
    def either(self, s):
        s.require((s.x > 0) | (s.y > 0))
        s.flag = True


class ConstantControlFlow(Tiny):
    """Python control flow over parameters and constants is allowed: it unrolls."""

    @action(k="CELLS")
    def first_only(self, s, k):
        if k == 0:
            s.require(s.arr[k] > 0)
        else:
            s.require(s.arr[k] > s.arr[k - 1])
        s.x = 0


def test_python_if_on_state_value_fails_at_load_naming_the_action():
    msg = load_error(PythonIf)
    assert "action bump(k=0)" in msg and "Python `if`" in msg
    PythonIfFixed()


@pytest.mark.parametrize("cls, label", [(PythonAnd, "both()"), (PythonOr, "either()"), (PythonNot, "negate()")])
def test_python_connectives_on_state_values_fail_at_load_naming_the_action(cls, label):
    msg = load_error(cls)
    assert f"action {label}" in msg
    assert "where()" in msg or "&" in msg      # the message says what to use instead


def test_corrected_connectives_and_constant_control_flow_load():
    spec = ConnectivesFixed()
    assert {a.name for a in spec.actions} >= {"both", "either"}
    spec = ConstantControlFlow()
    assert [a.label for a in spec.actions if a.name == "first_only"] == [
        "first_only(k=0)", "first_only(k=1)", "first_only(k=2)"]


# ------------------------------------------------------------------------------------------
# writes that can leave a field's bounds (in some well-typed state where the guard holds)
# ------------------------------------------------------------------------------------------
class UnguardedIncrement(Tiny):
    @action()
    def inc(self, s):
        s.x = s.x + 1                    # x = 3 -> 4


class GuardedIncrement(Tiny):
    @action()
    def inc(self, s):
        s.require(s.x < 3)
        s.x = s.x + 1


class LeoBump(Kip320):
    """A Kafka spec with one extra action: append without checking the log is full."""

    @action(r="REPLICAS")
    def append_unchecked(self, s, r):
        s.require(s.up[r])
        s.leo[r] = s.leo[r] + 1


class LeoBumpFixed(Kip320):
    @action(r="REPLICAS")
    def append_unchecked(self, s, r):
        s.require(s.up[r] & (s.leo[r] < self.L))
        s.leo[r] = s.leo[r] + 1


def test_write_outside_bounds_fails_at_load_naming_action_and_column():
    msg = load_error(UnguardedIncrement)
    assert "action inc()" in msg and "x" in msg and "0..3" in msg
    GuardedIncrement()


def test_kafka_leo_incremented_without_guard_fails_at_load():
    msg = load_error(LeoBump)
    assert "action append_unchecked(r=0)" in msg and "leo[0]" in msg
    spec = LeoBumpFixed()
    assert backends.action_named(spec, "append_unchecked", {"r": 1}) is not None


class NegativeWrite(Tiny):
    @action()
    def dec(self, s):
        s.require(s.x <= s.y)
        s.y = s.y - s.x - 1             # x = y = 0 -> -1


def test_write_below_lower_bound_fails_at_load():
    msg = load_error(NegativeWrite)
    assert "action dec()" in msg and "y" in msg


# ------------------------------------------------------------------------------------------
# writes through a state-valued index
# ------------------------------------------------------------------------------------------
class PointerWrite(Tiny):
    @action()
    def poke(self, s):
        s.arr[s.ptr] = 0                 # ptr = 3 names no cell of arr


class PointerWriteGuarded(Tiny):
    @action()
    def poke(self, s):
        s.require(s.ptr < 3)
        s.arr[s.ptr] = 0


class KafkaPointerWrite(Kip320):
    @action(r="REPLICAS")
    def touch_leader_hw(self, s, r):
        s.require(s.up[r])
        s.hw[s.leader[r]] = 0            # leader[r] = R ("none") names no replica


def test_write_through_out_of_range_state_index_fails_at_load():
    msg = load_error(PointerWrite)
    assert "action poke()" in msg and "arr" in msg and "out-of-range index" in msg
    spec = PointerWriteGuarded()
    poke = backends.action_named(spec, "poke", {})
    row = spec.layout.encode({"x": 0, "y": 0, "flag": False, "arr": [1, 2, 3], "ptr": 2})
    assert spec.layout.decode(backends.scalar(spec).step(row, poke))["arr"] == [1, 2, 0]
    row[spec.layout.column("ptr")] = 3
    assert backends.scalar(spec).step(row, poke) is None


def test_kafka_write_through_none_replica_index_fails_at_load():
    msg = load_error(KafkaPointerWrite)
    assert "action touch_leader_hw(r=0)" in msg and "hw" in msg


class ConstantIndexOutOfRange(Tiny):
    @action()
    def far(self, s):
        s.arr[3] = 0


def test_constant_index_out_of_range_fails_at_load():
    msg = load_error(ConstantIndexOutOfRange)
    assert "action far()" in msg and "index 3" in msg


# ------------------------------------------------------------------------------------------
# bool / int mix-ups
# ------------------------------------------------------------------------------------------
class BoolIntoInt(Tiny):
    @action()
    def mark(self, s):
        s.x = s.flag


class IntIntoBool(Tiny):
    @action()
    def mark(self, s):
        s.flag = s.x


class ConstBoolIntoInt(Tiny):
    @action()
    def mark(self, s):
        s.x = True


class KafkaBoolIntoInt(Kip320):
    @action(r="REPLICAS")
    def mark_leo(self, s, r):
        s.require(s.up[r])
        s.leo[r] = s.truncating[r]


class IntConnective(Tiny):
    @action()
    def mix(self, s):
        s.flag = s.x & s.y               # & is a boolean connective, not a bitwise and


@pytest.mark.parametrize("cls, label, column, kind", [
    (BoolIntoInt, "mark()", "x", "non-integer"),
    (ConstBoolIntoInt, "mark()", "x", "non-integer"),
    (IntIntoBool, "mark()", "flag", "non-boolean"),
    (KafkaBoolIntoInt, "mark_leo(r=0)", "leo[0]", "non-integer"),
])
def test_bool_int_mixup_fails_at_load_naming_action_and_column(cls, label, column, kind):
    msg = load_error(cls)
    assert f"action {label}" in msg and column in msg and kind in msg


def test_ill_typed_expression_fails_at_load_naming_the_action():
    msg = load_error(IntConnective)
    assert "action mix()" in msg and "ill-typed" in msg


# ------------------------------------------------------------------------------------------
# other discipline rules
# ------------------------------------------------------------------------------------------
class RequireAfterWrite(Tiny):
    @action()
    def late(self, s):
        s.x = 0
        s.require(s.y > 0)


class WholeArrayWrite(Tiny):
    @action()
    def wipe(self, s):
        s.arr = 0


class NonBooleanInvariant(Tiny):
    @invariant("count")
    def count(self, s):
        return s.x + 1


def test_require_after_write_fails_at_load():
    msg = load_error(RequireAfterWrite)
    assert "action late()" in msg and "require" in msg


def test_whole_array_write_fails_at_load():
    msg = load_error(WholeArrayWrite)
    assert "action wipe()" in msg and "arr" in msg


def test_non_boolean_invariant_fails_at_load():
    msg = load_error(NonBooleanInvariant)
    assert "count" in msg and "boolean" in msg


def test_statically_disabled_instances_are_dropped_not_rejected():
    class ConstantGuard(Tiny):
        @action(k="CELLS")
        def only_one(self, s, k):
            s.require(k == 1)
            s.x = 0
    spec = ConstantGuard()
    assert [a.label for a in spec.actions if a.name == "only_one"] == ["only_one(k=1)"]
    assert [a.id for a in spec.actions] == list(range(len(spec.actions)))


# ------------------------------------------------------------------------------------------
# mistakes in the declarations themselves: a DeclarationError naming the action and what to
# write, never a bare AttributeError or TypeError (decorator misuse fails at class creation)
# ------------------------------------------------------------------------------------------
def _domain_typo():
    class C(Tiny):
        @action(i="CELL")
        def set_cell(self, s, i):
            s.arr[i] = 1
    return C


def _domain_not_a_range():
    class C(Tiny):
        def configure(self, bounds):
            self.CELLS = ["a", "b"]
    return C


def _domain_for_another_parameter():
    class C(Tiny):
        @action(j="CELLS")
        def set_cell(self, s, i):
            s.arr[i] = 1
    return C


def _no_domain_for_a_parameter():
    class C(Tiny):
        @action()
        def set_cell(self, s, i):
            s.arr[i] = 1
    return C


def _unknown_field_in_action():
    class C(Tiny):
        @action(i="CELLS")
        def set_cell(self, s, i):
            s.arr[i] = s.xx
    return C


def _unknown_field_in_invariant():
    class C(Tiny):
        @invariant("small")
        def small(self, s):
            return s.xx <= 3
    return C


def _unknown_field_in_initial():
    class C(Tiny):
        def initial(self, s):
            s.zz = 1
    return C


def _initial_out_of_bounds():
    class C(Tiny):
        def initial(self, s):
            s.x = 9
    return C


def _action_returns_a_value():
    class C(Tiny):
        @action(i="CELLS")
        def set_cell(self, s, i):
            return s.arr[i] + 1
    return C


def _action_named_like_an_engine_attribute():
    class C(Tiny):
        @action(i="CELLS")
        def actions(self, s, i):
            s.arr[i] = 1
    return C


def _fields_not_fields():
    class C(Tiny):
        def fields(self):
            return [("x", 0, 3)]
    return C


def _configure_reads_an_undeclared_bound():
    class C(Tiny):
        defaults = dict(n=2)

        def configure(self, bounds):
            self.CELLS = range(bounds.cells)
    return C


def _configure_takes_the_bounds_as_keywords():
    class C(Tiny):
        defaults = dict(n=2)

        def configure(self, n):
            self.CELLS = range(n)
    return C


def _bare_action():
    class C(Tiny):
        @action
        def other(self, s):
            s.x = 1
    return C


def _bare_invariant():
    class C(Tiny):
        @invariant
        def other(self, s):
            return s.x <= 3
    return C


def _domain_a_number():
    class C(Tiny):
        @action(i=3)
        def set_cell(self, s, i):
            s.arr[i] = 1
    return C


def _same_invariant_twice():
    class C(Tiny):
        @invariant("big")
        def big(self, s):
            return s.x <= 3

        @invariant("big")
        def bigger(self, s):
            return s.y <= 3
    return C


def _bad_fuzz_target():
    from isrcheck.model.spec import FuzzTarget

    class C(Tiny):
        fuzz_targets = (FuzzTarget("moves", "nope", "moves"),)
    return C


@pytest.mark.parametrize("make, words", [
    (_domain_typo, ["action set_cell", "i='CELL'", 'write @action(i="CELLS")']),
    (_domain_not_a_range, ["action set_cell", "not a range of ints", "self.CELLS = range(...)"]),
    (_domain_for_another_parameter, ["action set_cell", "parameters are (i)", "(j)", '@action(i="...")']),
    (_no_domain_for_a_parameter, ["action set_cell", "parameters are (i)", '@action(i="...")']),
    (_unknown_field_in_action, ["action set_cell(i=0)", "no state field 'xx'"]),
    (_unknown_field_in_invariant, ["invariant small", "no state field 'xx'"]),
    (_unknown_field_in_initial, ["initial", "no state field 'zz'"]),
    (_initial_out_of_bounds, ["initial", "x = 9", "0..3"]),
    (_action_returns_a_value, ["action set_cell(i=0)", "returns a value"]),
    (_action_named_like_an_engine_attribute, ["C.actions: the engines read actions", "another name"]),
    (_fields_not_fields, ["fields()", "Field(...)"]),
    (_configure_reads_an_undeclared_bound, ["C.configure() reads bounds.cells", "declared: n",
                                            "Bound('cells', default, lo, hi, doc)"]),
    (_configure_takes_the_bounds_as_keywords, ["C.configure() takes one argument", "def configure(self, bounds)",
                                               "bounds.n"]),
    (_bare_action, ["@action on 'other'", '@action(r="REPLICAS")']),
    (_bare_invariant, ["@invariant on 'other'", '@invariant("']),
    (_domain_a_number, ["@action(i=3)", 'i="REPLICAS"']),
    (_same_invariant_twice, ["invariant 'big' twice"]),
    (_bad_fuzz_target, ["fuzz target 'moves'", "no state field 'nope'"]),
])
def test_declaration_mistakes_name_the_culprit_and_what_to_write(make, words):
    with pytest.raises(DeclarationError) as info:
        make()()
    for w in words:
        assert w in str(info.value)


def test_replica_axes_must_agree():
    with pytest.raises(DeclarationError, match="replica axes of different lengths: b has 2, a has 3"):
        Layout([Field("a", 0, 1, (3,), axes=("replica",)), Field("b", 0, 1, (2,), axes=("replica",))])
    assert Layout([Field("a", 0, 1, (3, 3), axes=("replica", "replica"))]).replicas == 3
    with pytest.raises(DeclarationError, match="shape 3"):
        Field("s", 0, 1, 3)


# ------------------------------------------------------------------------------------------
# fields and layouts
# ------------------------------------------------------------------------------------------
def test_field_bounds_must_fit_a_cell():
    with pytest.raises(DeclarationError, match="big"):
        Field("big", 0, 128)
    with pytest.raises(DeclarationError, match="low"):
        Field("low", -129, 0)
    with pytest.raises(DeclarationError, match="inverted"):
        Field("inverted", 3, 2)
    with pytest.raises(DeclarationError, match="axes"):
        Field("cells", 0, 1, (2, 2), axes=("replica",))
    assert (Field("b", 5, 9, boolean=True).lo, Field("b", 5, 9, boolean=True).hi) == (0, 1)


def test_duplicate_field_fails():
    with pytest.raises(DeclarationError, match="twice"):
        Layout([Field("a", 0, 1), Field("a", 0, 2)])


def random_rows(layout, n, rng):
    return [rng.integers(layout.lo, layout.hi + 1).astype(np.int8) for _ in range(n)]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_layout_round_trip_on_random_rows(name):
    spec = SPECS[name]()
    lay = spec.layout
    rng = np.random.default_rng([SEED, sorted(SPECS).index(name)])
    for row in random_rows(lay, 200, rng):
        state = lay.decode(row)
        assert set(state) == set(lay.fields)
        back = lay.encode(state)
        assert back.dtype == np.int8 and np.array_equal(back, row), name
        # cells sit where Layout.column says, with the field's type
        for fname, f in lay.fields.items():
            for idx in f.cells():
                v = state[fname]
                for i in idx:
                    v = v[i]
                assert isinstance(v, bool) if f.boolean else type(v) is int
                assert int(v) == int(row[lay.column(fname, idx)])


def test_layout_columns_are_a_bijection():
    lay = SPECS["kip-320"](replicas=3).layout
    columns = [lay.column(n, idx) for n, f in lay.fields.items() for idx in f.cells()]
    assert sorted(columns) == list(range(lay.width))
    assert len(lay.names) == lay.width == len(set(lay.names))


def test_encode_rejects_out_of_range_values():
    spec = SPECS["kip-320"]()
    lay = spec.layout
    good = lay.decode(backends.scalar(spec).initial_row())
    lay.encode(good)
    cases = [
        ("q_epoch", lambda s: s.__setitem__("q_epoch", spec.E + 1)),          # scalar above hi
        ("leo", lambda s: s["leo"].__setitem__(1, -1)),                        # array cell below lo
        ("log_record", lambda s: s["log_record"][0].__setitem__(1, spec.M + 1)),   # nested cell above hi
        ("remote_leo", lambda s: s["remote_leo"][1].__setitem__(0, -2)),       # below a negative lo
        ("up", lambda s: s["up"].__setitem__(0, 2)),                           # boolean cell given 2
    ]
    for fname, mutate in cases:
        bad = copy.deepcopy(good)
        mutate(bad)
        with pytest.raises(ValueError, match=fname):
            lay.encode(bad)


def test_encode_rejects_missing_fields_and_wrong_shapes():
    lay = SPECS["kip-320"]().layout
    good = lay.decode(np.asarray(lay.lo, dtype=np.int8))
    missing = dict(good)
    del missing["hw"]
    with pytest.raises(ValueError, match="hw"):
        lay.encode(missing)
    short = copy.deepcopy(good)
    short["leo"] = short["leo"][:-1]
    with pytest.raises(ValueError, match="leo"):
        lay.encode(short)
    nested = copy.deepcopy(good)
    nested["q_epoch"] = [0]
    with pytest.raises(ValueError, match="q_epoch"):
        lay.encode(nested)
    flat = copy.deepcopy(good)
    flat["log_record"] = [0] * len(flat["log_record"])
    with pytest.raises(ValueError, match="log_record"):
        lay.encode(flat)


class Expecting(Tiny):
    name = "expecting"
    expected = {"small": "holds", "flag-off": "holds"}
    expected_why = {"small": "x never grows", "flag-off": "nothing sets the flag"}

    @invariant("flag-off")
    def flag_off(self, s):
        return ~s.flag


def test_expected_inherits_and_a_subclass_states_only_what_changes():
    class Changed(Expecting):
        expected = {"flag-off": "violated"}

    class Restated(Expecting):
        expected = {**Expecting.expected, "flag-off": "violated"}
        expected_why = {**Expecting.expected_why, "flag-off": "this version sets it"}

    assert Changed.expected == Restated.expected == {"small": "holds", "flag-off": "violated"}
    # a why explains a verdict: it is inherited with it, and lost when the verdict changes without a new one
    assert Changed.expected_why == {"small": "x never grows"}
    assert Restated.expected_why == {"small": "x never grows", "flag-off": "this version sets it"}
    assert Expecting.expected == {"small": "holds", "flag-off": "holds"}


def test_dropped_invariants_take_their_expectations_and_proofs_along():
    class Proved(Expecting):
        proofs = {"small": {"lemmas": ["flag-off"], "settings": {}}}

    class Dropping(Proved):
        dropped_invariants = ("flag-off",)

    assert list(Proved().invariants) == ["small", "flag-off"] and Proved.proofs
    spec = Dropping()
    assert list(spec.invariants) == ["small"] and Dropping.expected == {"small": "holds"}
    assert Dropping.expected_why == {"small": "x never grows"} and Dropping.proofs == {}
    with pytest.raises(DeclarationError, match="Typo.dropped_invariants: 'flag_off' is no invariant it inherits"):
        type("Typo", (Expecting,), {"dropped_invariants": ("flag_off",)})


def test_kip_320_lemmas_are_inherited_unless_a_version_drops_them():
    from isrcheck.specs.kip_320_lemmas import LEMMAS

    class SameProtocol(Kip320):
        name = "same-protocol"

    assert set(LEMMAS) <= set(SameProtocol.declared_invariants()) and set(LEMMAS) <= set(SameProtocol.expected)
    assert SameProtocol.proofs == Kip320.proofs and "no-committed-loss" in Kip320.proofs
    acks1 = SPECS["acks-1"]
    assert acks1.dropped_invariants == LEMMAS and acks1.proofs == {}
    assert not set(LEMMAS) & (set(acks1.declared_invariants()) | set(acks1.expected) | set(acks1.expected_why))
