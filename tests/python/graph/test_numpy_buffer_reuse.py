"""The reference backend writes a ufunc's result into a dead intermediate of the same dtype and shape (``out=``),
as eager NumPy elides temporaries, so long elementwise chains are not slower than eager. The class tested: the
result never changes, and no array anyone can still see is overwritten: outputs, views of an intermediate kept
alive, intermediates changed in place, other dtypes and broadcast shapes are never reused; layouts (strides) of
large results match eager NumPy. Arrays are above NumPy's 256 KiB elision threshold.
PYTEST_DONT_REWRITE"""

import tracemalloc

import pytest

from numpy_differential import case, check_varied, isolated_check, run_cases

import sot
from sot import capture as cap

np = pytest.importorskip("numpy")

N = 64 * 1024  # 512 KiB of float64
rng = np.random.default_rng(11)
A = rng.standard_normal(N)
B = rng.random(N) + 1.0
M = rng.standard_normal((256, 512))
COL = rng.standard_normal((512, 1))
ROW = rng.standard_normal(512)
INTS = rng.integers(-50, 50, N)


def chain(a, b):
    x = a * 2.0
    x = x + b
    x = x * x
    x = np.sqrt(x)
    x = x - a
    return x / b


def intermediate_returned(a, b):
    y = a * 2.0
    z = y + b
    return y, z * 3.0


def view_of_intermediate_kept(a, b):
    y = a * 2.0
    v = y[::2]
    r = y.reshape(256, 256)
    z = y + b
    return v, r, z


def changed_in_place(a, b):
    y = a * 2.0
    y += 1.0
    z = y * b
    return z + 1.0


def dtype_changes(ints, b):
    y = ints * 3
    z = y / 7
    w = z + b
    return w.astype(np.float32) * np.float32(2.0)


def broadcasts(col, row):
    y = col * 2.0
    z = y + row
    return z * z


def transposed_input(m):
    y = m.T * 2.0
    z = y + 1.0
    return z * z


def same_value_twice(a):
    y = a + 1.0
    return y * y


def reductions_between(a, b):
    y = a * b
    s = y.sum()
    z = y - s
    return z * 2.0, s


CASES = [
    case(chain, A, B),
    case(intermediate_returned, A, B),
    case(view_of_intermediate_kept, A, B),
    case(changed_in_place, A, B),
    case(dtype_changes, INTS, B),
    case(broadcasts, COL, ROW),
    case(transposed_input, M),
    case(same_value_twice, A),
    case(reductions_between, A, B),
]


@run_cases(CASES)
def test_reuse_keeps_results(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def test_other_sizes_and_dtypes_through_one_translation():
    """Small (not reused) and large (reused) arrays, float32 and float64, through one translated function."""
    check_varied(chain, [(A, B), (A[:100], B[:100]), (A.astype(np.float32), B.astype(np.float32)),
                         (A[: N // 2], B[: N // 2])])


def compiled_graph(fn, *args):
    sot.reset()
    translator = sot.translate.new_translator(records=True, backend="numpy")
    with cap.capture(translator):
        fn(*args)
    (graph,) = [g for r in translator.records() for g in r["graphs"]]
    return graph["compiled"]


def test_large_results_have_eager_layouts():
    for fn, args in [(transposed_input, (M,)), (chain, (A, B)), (broadcasts, (COL, ROW))]:
        got, want = compiled_graph(fn, *args)(*args), fn(*args)
        assert got.strides == want.strides and got.flags.c_contiguous == want.flags.c_contiguous, fn.__name__


def test_a_chain_holds_one_intermediate_at_a_time():
    """Peak memory of the compiled chain: one intermediate reused through the chain (without reuse each op
    allocates a new array while the previous one is still alive: two at a time)."""
    compiled = compiled_graph(chain, A, B)
    tracemalloc.start()
    try:
        result = compiled(A, B)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(result, chain(A, B))
    assert peak < 1.5 * A.nbytes, f"peak {peak} bytes for arrays of {A.nbytes}"
