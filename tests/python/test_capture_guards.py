"""The C++ guard tree: every check kind, shared prefixes, failure messages, and guards deciding cache hits and
recompiles inside the capture runtime."""

import array

import pytest

import sot.bytecode as bc

from sot import capture as cap
from test_capture import Recorder, plus

TREE_GLOBAL = 10


def target(x, items, config):
    return x


def guards():
    return cap.Guards(target)


def test_each_check_kind_passes_and_fails_with_a_clear_message():
    g = guards()
    g.local("x").type_is(int).equals(3)
    g.local("items").len_is(2)
    g.local("config").dict_keys(["a", "b"])
    g.local("config").item("a").equals("on")
    g.global_("TREE_GLOBAL").is_(TREE_GLOBAL)
    assert len(g.tree) == 6
    good = {"x": 3, "items": [1, 2], "config": {"a": "on", "b": 1}}
    assert g.tree.check(good, {"TREE_GLOBAL": TREE_GLOBAL}) == (True, "")
    cases = [
        ({**good, "x": 3.0}, "x: expected type int, got 3.0"),
        ({**good, "x": 4}, "x: expected == 3, got 4"),
        ({**good, "items": [1]}, "items: expected len 2, got <list of 1>"),
        ({**good, "config": {"b": 1, "a": "on"}}, "config: expected keys ('a', 'b')"),
        ({**good, "config": {"a": "off", "b": 1}}, "config['a']: expected == 'on', got 'off'"),
    ]
    for local_vars, message in cases:
        ok, failure = g.tree.check(local_vars, {"TREE_GLOBAL": TREE_GLOBAL})
        assert not ok and failure.startswith(message), failure
    ok, failure = g.tree.check(good, {"TREE_GLOBAL": 11})
    assert not ok and "globals()['TREE_GLOBAL']" in failure
    ok, failure = g.tree.check({"x": 3}, {})
    assert not ok and failure == "items is missing"


def test_equals_is_type_strict_and_takes_only_immutable_constants():
    g = guards()
    g.local("x").equals(1)
    assert g.tree.check({"x": 1, "items": (), "config": {}})[0]
    assert not g.tree.check({"x": True, "items": (), "config": {}})[0]
    assert not g.tree.check({"x": 1.0, "items": (), "config": {}})[0]
    with pytest.raises(TypeError):
        g.local("items").equals([1, 2])


def test_shared_prefixes_share_a_node():
    g = guards()
    g.local("config").item("a").type_is(str)
    g.local("config").item("a").len_is(2)
    g.local("config").item("b").equals(1)
    text = g.tree.describe()
    assert text.splitlines() == ["config['a']: type str", "config['a']: len 2", "config['b']: == 1"]


def test_array_meta_from_the_buffer_protocol():
    g = guards()
    g.local("items").array_like(array.array("d", [1.0, 2.0, 3.0]), dynamic=(0,))
    base = {"x": 0, "config": {}}
    assert g.tree.check({**base, "items": array.array("d", [1.0] * 7)})[0]
    ok, failure = g.tree.check({**base, "items": array.array("f", [1.0] * 3)})
    assert not ok and "format d" in failure
    ok, failure = g.tree.check({**base, "items": [1.0, 2.0, 3.0]})
    assert not ok and "type array" in failure


def test_ndarray_fields_decide_only_what_the_buffer_would():
    """Once an ndarray's dtype passed the buffer test, later ndarrays of that dtype object are checked from their
    fields - but an unaligned one (its buffer format is "=d", not "d"), a subclass and a structured dtype whose
    fields were renamed still go through the buffer protocol, and fail as before."""
    np = pytest.importorskip("numpy")
    g = guards()
    g.local("items").array_like(np.zeros(3))
    base = {"x": 0, "config": {}}
    assert g.tree.check({**base, "items": np.ones(3)})[0]  # the buffer path: dtype seen
    assert g.tree.check({**base, "items": np.arange(3.0)})[0]  # the fields path
    assert not g.tree.check({**base, "items": np.ones(4)})[0]
    unaligned = np.zeros(3 * 8 + 1, np.uint8)[1:].view(np.float64)
    assert not unaligned.flags.aligned and unaligned.dtype is np.ones(3).dtype
    ok, failure = g.tree.check({**base, "items": unaligned})
    assert not ok and "format" in failure
    assert g.tree.check({**base, "items": np.ones(3)})[0]

    st = np.dtype([("a", "f8"), ("b", "f8")])
    g2 = guards()
    g2.local("items").array_like(np.zeros(2, st))
    a = np.zeros(2, st)
    assert g2.tree.check({**base, "items": a})[0]
    renamed = np.zeros(2, st)
    renamed.dtype.names = ("c", "d")  # the same dtype object, another buffer format
    assert not g2.tree.check({**base, "items": renamed})[0]


def test_symbolic_shapes_bind_once_per_evaluation_and_exclude_0_and_1():
    g = guards()
    g.local("x").array("d", ("n", 3))
    g.local("items").array("d", ("n",))
    base = {"config": {}}

    def arr(rows, cols=None):
        flat = array.array("d", [0.0] * (rows * (cols or 1)))
        return memoryview(flat).cast("B").cast("d", (rows, cols) if cols else (rows,))

    assert g.tree.check({**base, "x": arr(5, 3), "items": arr(5)})[0]
    assert g.tree.check({**base, "x": arr(9, 3), "items": arr(9)})[0]  # any n >= 2, the same on both
    ok, failure = g.tree.check({**base, "x": arr(5, 3), "items": arr(6)})
    assert not ok and failure == "items: expected array format d shape (s0>=2,), got array format d shape (6,) C-contiguous"
    ok, failure = g.tree.check({**base, "x": arr(1, 3), "items": arr(1)})
    assert not ok and "x: expected array format d shape (s0>=2, 3)" in failure  # 0 and 1 stay specialised
    assert not g.tree.check({**base, "x": arr(5, 4), "items": arr(5)})[0]
    with pytest.raises(ValueError, match="sizes are >= 0"):
        g.local("x").array("d", (-3,))


def test_unknown_local_is_an_error_at_build_time():
    with pytest.raises(ValueError, match="no local named"):
        guards().local("nope").equals(1)


def scaled(x, factor):
    return x * factor


def test_guard_tree_decides_hits_and_recompiles_in_the_runtime():
    def answer(code, local_vars):
        g = cap.Guards(code)
        g.local("x").type_is(type(local_vars["x"]))
        g.local("factor").equals(local_vars["factor"])
        return plus(code, 1000), g.tree

    rec = Recorder(answer)
    with cap.capture(rec):
        assert scaled(2, 3) == 1006
        assert scaled(5, 3) == 1015      # same type, same factor: hit
        assert scaled(2.5, 3) == 1007.5  # new type: recompile
        assert scaled(2, 4) == 1008      # new constant: recompile
        assert scaled(7, 3) == 1021      # first entry again: hit
    s = cap.stats(scaled)
    assert (s["translations"], s["hits"], s["misses"]) == (3, 2, 3)
    assert any(r.startswith("guard failed: x: expected type int, got 2.5") for r in s["reasons"])
    assert any(r.startswith("guard failed: factor: expected == 3, got 4") for r in s["reasons"])
    cap.clear(scaled)


def reads_global():
    return TREE_GLOBAL


def test_global_guard_notices_a_changed_global():
    global TREE_GLOBAL

    def answer(code, local_vars):
        g = cap.Guards(code)
        g.global_("TREE_GLOBAL").equals(TREE_GLOBAL)
        return bc.roundtrip(code), g.tree  # an equal but distinct code object

    old = TREE_GLOBAL
    try:
        with cap.capture(Recorder(answer)):
            assert reads_global() == 10
            TREE_GLOBAL = 20
            assert reads_global() == 20
        s = cap.stats(reads_global)
        assert s["translations"] == 2
        assert any("TREE_GLOBAL" in r for r in s["reasons"])
    finally:
        TREE_GLOBAL = old
        cap.clear(reads_global)


def test_dict_version_guard_notices_any_mutation():
    table = {"a": 1}
    g = guards()
    g.local("config").dict_unchanged(table)
    base = {"x": 0, "items": ()}
    assert g.tree.check({**base, "config": table})[0]
    table["b"] = 2
    ok, failure = g.tree.check({**base, "config": table})
    assert not ok and "unchanged since version" in failure
    assert not g.tree.check({**base, "config": {"a": 1}})[0]  # an equal but different dict
    with pytest.raises(TypeError):
        guards().local("config").dict_unchanged([1])


def test_equals_is_strict_about_float_bits_and_item_types():
    g = guards()
    g.local("x").equals(0.0)
    g.local("items").equals((1, "a"))
    base = {"config": {}}
    assert g.tree.check({**base, "x": 0.0, "items": (1, "a")})[0]
    assert not g.tree.check({**base, "x": -0.0, "items": (1, "a")})[0]  # 0.0 == -0.0, but str() differs
    assert not g.tree.check({**base, "x": 0.0, "items": (True, "a")})[0]  # (1,) == (True,), but types differ
    assert not g.tree.check({**base, "x": 0.0, "items": (1.0, "a")})[0]
    nan = float("nan")
    g2 = guards()
    g2.local("x").equals(nan)
    assert g2.tree.check({"x": nan, "config": {}, "items": ()})[0]  # the same NaN, bit for bit


class LoudRepr:
    calls = 0

    def __repr__(self):
        LoudRepr.calls += 1
        return "loud"


def test_guard_failures_never_call_a_user_repr():
    g = guards()
    g.local("x").type_is(int)
    ok, failure = g.tree.check({"x": LoudRepr(), "config": {}, "items": ()})
    assert not ok and failure == "x: expected type int, got <LoudRepr object>"
    assert LoudRepr.calls == 0
