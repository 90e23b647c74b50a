"""int() and float() of NumPy values of the graph (issue 20, item 4): ``return board, int(board.sum())``. The Python
number is made where the graph runs, by the builtin itself, so its type and value are plain Python's; the frame may
return it or keep it in a container; +, -, *, /, //, % with other such numbers or Python constants and max(), min(),
abs() of numbers of one kind and comparisons (a Python bool) are ops of the graph too; whatever needs its value while
translating (a branch, an index) breaks the graph there. Formatting a NumPy scalar or such a number (f"{x.mean():.4f}", !r, !s)
calls format(), str() or repr() where the graph runs, and the f-string's parts are joined there: a str made in the
graph (a spec the type rejects breaks, and then raises as plainly). int() of a NaN or an infinity raises ValueError
or OverflowError where the graph runs, so it is not captured while side effects wait to be replayed. Each case compared with plain NumPy on the
first call, from the cache and with varied arguments (other values, dimensions one longer, another dtype).
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(23)
B = rng.integers(0, 2, (4, 5))
X = rng.standard_normal(6)
Z = X + 1j * X[::-1]

g_count = 0


def numbers_returned(b, x):
    return int(b.sum()), float(x.max()), int(np.sqrt(x.size)), [int(v) for v in b[0, :2]], float(b.mean())


def number_of_bools_and_zero_d(b, x):
    return int((x > 0).any()), float(x[:1].reshape(())), int(b.max() > 0)


def number_kept_in_a_dict(x):
    stats = {"n": int(x.size), "top": float(x.max())}
    stats["low"] = float(x.min())
    return stats


def arithmetic_on_numbers(x, n):
    c = int((x > 0).sum())
    return c / n, c * 2 + 1, abs(float(x.min())) - 0.5, c // 1, c % 3, max(c, 3), min(float(x.max()), 2.5)


def max_of_a_generator(xs):
    return max(float(x.max()) for x in xs), sum([int(x.argmax()) for x in xs])


def division_by_zero_raises(x):
    c = int((x > 1e9).sum())
    return 10 / c


def division_after_effect_breaks(x):
    global g_count
    c = int((x > 0).sum())
    g_count = 5
    return 10 // c


def mixed_kinds_max_breaks(x):
    return max(int(x.argmax()), float(x.max()))


def number_compared(x):
    # a Python bool made in the graph (a while loop's test): returned as a bool
    n = int(x.sum())
    return n > 1, float(x.max()) <= 0.5, n == 2.0


def number_in_a_branch_breaks(b):
    if int(b.sum()) > 3:
        return "many"
    return "few"


def summary_text(x):
    return f"mean={x.mean():.4f} std={x.std():.4f} n={x.size}", x.argmax()


def conversions_and_numbers(x):
    c = int(x.argmax())
    return f"{x.max()}|{c:>4}|{x.min()!r}|{float(x.sum())!s:>10}|{x[0]!a}"


def spec_the_type_rejects_breaks(x):
    return f"{x.max():d}"


def formatting_an_array_breaks(x):
    return f"{x}"


def text_in_python_breaks(x):
    return f"{x.max():.2f}" + "!"


def int_of_nan_raises(x):
    return int(x.max() / 0.0 * 0.0)


def int_after_effect_breaks(x):
    global g_count
    g_count = 4
    return int(x.max())


def complex_breaks(z):
    return float(z.sum())


def array_of_more_items_breaks(x):
    return float(x[:1])


def array_with_int_of_sum(x):
    # x + n for a Python int n made in the graph: its dtype may depend on n's value (NEP 50 raises for an int
    # out of an int8 array's range, 1.x promotes by value), so the op is captured only where no value could.
    n = int(x.sum())
    return x + n, x * 2 - n


def array_with_float_of_mean(x):
    m = float(x.mean())
    return x - m, (x - m) / (m + 1.0)


def inverted_flag(x, b):
    # (~ of a bool warns on each call on 3.12 and later: never folded into the translation)
    return x + 1.0, ~b, -b


CASES = [
    case(inverted_flag, np.ones(2), True, breaks=1, variants=[((np.ones(3), False), {}), ((np.ones(2), True), {})]),
    case(numbers_returned, B, X),
    case(number_of_bools_and_zero_d, B, X),
    case(number_kept_in_a_dict, X),
    case(arithmetic_on_numbers, X, 4),
    case(max_of_a_generator, [X, X[:3] * 2.0, X[::-1]]),
    case(division_by_zero_raises, X),
    case(division_after_effect_breaks, X, graphs=1, breaks=1),
    case(mixed_kinds_max_breaks, X, graphs=1, breaks=1),
    case(number_compared, X),
    case(number_in_a_branch_breaks, B, graphs=1, breaks=1),
    case(summary_text, X),
    case(conversions_and_numbers, X),
    case(spec_the_type_rejects_breaks, X, graphs=1, breaks=1),
    case(formatting_an_array_breaks, X, graphs=0, breaks=1),
    case(text_in_python_breaks, X, graphs=1, breaks=1),
    case(int_of_nan_raises, X),
    case(int_after_effect_breaks, X, graphs=1, breaks=1),
    case(complex_breaks, Z, graphs=1, breaks=1),
    case(array_of_more_items_breaks, X, graphs=1, breaks=1),
    case(array_with_int_of_sum, X),
    case(array_with_int_of_sum, np.arange(6)),  # (int64: every int64 value gives int64)
    case(array_with_int_of_sum, np.arange(6, dtype=np.int8), graphs=2, breaks=1),
    case(array_with_float_of_mean, X),
]


@run_cases(CASES)
def test_python_numbers(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
