"""Python floats whose value changes from call to call (``step(x, v, dt)`` with a new ``dt``): the first
translation folds the float as a constant and guards its value; once a later call brings another value, the next
translation takes the float as an input of the graph (a Python float made where the graph runs on), so one
translation serves every value - in a frame with an ndarray among its locals. Every call is compared with its
plain run: values and exact types, exceptions, arguments after the call.
PYTEST_DONT_REWRITE"""

import math

import pytest

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402


def same(a, b):
    if isinstance(a, tuple):
        return type(b) is tuple and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def run_both(fn, args_list):
    """Each argument tuple plainly and translated (one translated function for all): same results or the same
    exception; returns the translation statistics."""
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    for args in args_list:
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            plain = fn(*args)
        except Exception as e:  # noqa: BLE001 - compared below
            plain = e
        try:
            with cap.capture(translator):
                got = fn(*copies)
        except Exception as e:  # noqa: BLE001
            got = e
        if isinstance(plain, Exception):
            assert type(got) is type(plain) and str(got) == str(plain), (args, plain, got)
        else:
            assert same(plain, got), (args, plain, got)
        for a, c in zip(args, copies):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, c, equal_nan=True)
    return cap.stats(fn), translator.records()


def drift(x, v, dt):
    x = x + v * dt
    return x, 0.5 * dt * (v * v).sum()


def branchy(x, t):
    if t > 0.5:
        return x * 2.0
    return x - t


def returns_it(x, dt):
    return x * dt, dt, dt * 2.0


def sized(x, k):
    return x[: int(k)].sum()


def in_place(x, dt):
    x *= dt
    x += 1.0


def pure(a, b):
    return a * b + 1.0


def test_one_translation_serves_every_value():
    x, v = np.linspace(0, 1, 5), np.linspace(1, 2, 5)
    stats, records = run_both(drift, [(x, v, 0.01 * k) for k in range(1, 21)])
    assert stats["translations"] == 2, stats
    texts = [g["text"] for r in records for g in r["graphs"]]
    assert any("input dt : Python float" in t for t in texts), texts


@pytest.mark.parametrize("fn,values", [
    (branchy, [0.1, 0.9, 0.2, 0.7, 0.5, 0.51]),
    (returns_it, [1.0, 2.5, -0.0, 0.0, float("nan"), float("inf"), -3.25]),
    (sized, [2.0, 3.0, 4.9, 0.0, 7.0]),
    (in_place, [0.5, 2.0, -1.0, 0.0]),
])
def test_changed_floats_equal_plain(fn, values):
    x = np.linspace(-1, 1, 6)
    run_both(fn, [(x, t) for t in values])


def test_signed_zeros_and_nans_are_other_values():
    x = np.ones(3)
    run_both(returns_it, [(x, 0.0), (x, -0.0), (x, 0.0), (x, float("nan")), (x, float("nan"))])


def test_a_float_subclass_stays_a_constant():
    class F(float):
        pass

    x = np.ones(3)
    run_both(drift, [(x, x, F(0.5)), (x, x, F(0.25)), (x, x, 0.5), (x, x, 0.75)])


def test_frames_without_arrays_keep_folding():
    stats, records = run_both(pure, [(1.5, 2.0), (2.5, 2.0), (3.5, 2.0)])
    texts = [g["text"] for r in records for g in r["graphs"]]
    assert not any("Python float" in t and "input" in t for t in texts), texts
