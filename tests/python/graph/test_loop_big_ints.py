"""Python ints past 2**63 in loops: a loop op computes its variable (and enumerate's count) as a 64-bit int, so a
loop whose values pass 2**63 - 1 is not made a loop op (it unrolls or runs as is, as Python computes); ints the
body carries or multiplies stay Python ints; int64 arrays meeting such an int raise NumPy's OverflowError as
eagerly. (`range()` of ints past 64 bits is not folded: the loop breaks there, and the rest runs as written.)
Each case runs plainly and translated (first call, cached, and with other arguments of the same types:
starts on both sides of 2**63, other trip counts) and must agree in value, exact type and exception.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import LEGACY, case, check, run_cases

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

BIG = 2**63 - 10  # the loops below pass 2**63 - 1 on their 10th step
F2 = np.ones(2)
I2 = np.ones(2, dtype=np.int64)
ROWS = np.ones((20, 2))
IROWS = np.ones((20, 2), dtype=np.int64)


def range_variable(x, s):
    for t in range(s, s + 20):
        x = x + t
    return x


def range_variable_down(x, s):
    for t in range(s, s - 20, -1):
        x = x + t
    return x


def range_stepped(x, s):
    for t in range(s, s + 200, 10):
        x = x * 0.5 + t
    return x


def enumerate_counter(x, s):
    out = 0
    for k, row in enumerate(x, start=s):
        out = k
    return out


def enumerate_counter_in_body(x, s):
    acc = np.zeros(x.shape[1])
    for k, row in enumerate(x, start=s):
        acc = acc + row * k
    return acc


def zipped_range(x, s):
    acc = np.zeros(x.shape[1])
    for row, t in zip(x, range(s, s + x.shape[0])):
        acc = acc + row + t
    return acc


def carried_int(x, n):
    k = 2**62
    for _ in range(n):
        k = k + 2**61
        x = x + 1.0
    return x, k


def carried_product(x, n):
    k = 3
    for _ in range(n):
        k = k * 3
        x = x * 0.5
    return x, k


def int_array_meets_big_int(x, s):
    for t in range(s, s + 20):
        x = x + t
    return x


def loop_variable_to_float(x, s):
    for t in range(s, s + 20):
        x = x + float(t)
    return x


def add_just_below_int64(x, s):
    # -2**63 - 1 rounds to -2**63 as a double: NumPy 1.x's value-based casting makes an object array
    return x + s


CASES = [
    case(range_variable, F2, BIG, breaks=1, variants=[((F2, BIG - 100), {}), ((np.ones(3), 2**62), {}), ((F2, -BIG), {})]),
    # (NumPy 1.x: below -2**63 the sum is an object array, not captured: a second break)
    case(range_variable_down, F2, -BIG, breaks=2 if LEGACY else 1, variants=[((F2, -BIG + 100), {}), ((F2, 5), {})]),
    case(range_stepped, F2, BIG - 100, breaks=1, variants=[((F2, BIG - 1000), {}), ((F2, 0), {})]),
    case(enumerate_counter, ROWS, BIG, graphs=0, variants=[((ROWS, 3), {}), ((ROWS[:17], BIG), {})]),
    case(enumerate_counter, IROWS, BIG, graphs=0, variants=[((IROWS, 3), {})]),
    case(enumerate_counter_in_body, ROWS, BIG, variants=[((ROWS, 3), {}), ((ROWS[:15], BIG - 5), {})]),
    case(zipped_range, ROWS, BIG, graphs=2, breaks=1, variants=[((ROWS, 3), {}), ((ROWS[:17], BIG + 50), {})]),
    case(carried_int, F2, 40, variants=[((F2, 10), {}), ((np.ones(4), 45), {})]),
    case(carried_product, F2, 50, variants=[((F2, 30), {}), ((np.ones(4), 60), {})]),
    # (NumPy 2 raises OverflowError at 2**63, a second break; NumPy 1.x's value-based casting makes float64)
    case(int_array_meets_big_int, I2, BIG, breaks=1 if LEGACY else 2, variants=[((I2, 5), {}), ((np.ones(3, dtype=np.int64), BIG - 9), {})]),
    case(add_just_below_int64, F2, -(2**63) - 1, graphs=0 if LEGACY else 1, breaks=1 if LEGACY else 0, variants=[((F2, -(2**63) - 1000), {}), ((F2, -(2**63)), {})]),
    case(loop_variable_to_float, F2, BIG, breaks=1, variants=[((F2, BIG - 50), {}), ((F2, 3), {})]),
]


@run_cases(CASES)
def test_big_ints_in_loops(fn, args, kwargs, graphs, breaks, fallbacks):
    check(fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, **kwargs)
