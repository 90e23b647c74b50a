"""The ``cpu`` backend: elementwise chains fused into groups and run block by block (tier A) give eager
NumPy's results bit for bit (values, dtypes, layouts), eager NumPy's floating-point warnings (once per op, in
order) and errors, and fall back to the ops one by one where they must; the plan shows the groups and kernels.
Every case runs with blocks of 64 elements (the smallest: blocks are whole multiples of 64) and the default,
on arrays large enough that blocks split rows, cross rows and cover the whole domain.
PYTEST_DONT_REWRITE"""

import os
import warnings

import pytest

import sot
from numpy_differential import LEGACY, case, check, run_cases, same
from sot import capture as cap

np = pytest.importorskip("numpy")

rng = np.random.default_rng(17)
A = rng.standard_normal((40, 37))
B = rng.standard_normal((40, 37))
ROW = rng.standard_normal(37)
COL = rng.standard_normal((40, 1))
X3 = rng.standard_normal((5, 30, 37))
F32 = rng.standard_normal((30, 29)).astype(np.float32)
F16 = rng.standard_normal((13, 37)).astype(np.float16)
I8 = (np.arange(-400, 400) % 120 - 60).astype(np.int8).reshape(20, 40)
I32 = np.arange(-400, 400, dtype=np.int32).reshape(20, 40)
U16 = np.arange(700, dtype=np.uint16)
BOOL = (np.arange(800) % 3 == 0).reshape(20, 40)
C128 = rng.standard_normal((17, 23)) + 1j * rng.standard_normal((17, 23))
V = rng.standard_normal(1001)
MIXED = np.tile(np.array([-1.0, 0.0, 1.0, 2.0, np.inf, -np.inf, np.nan, 1e308, -2.5, 4.0]), 30)


@pytest.fixture(autouse=True, params=[(64, False), (0, False), (0, True), (64, True)],
                ids=lambda p: f"block{p[0]}" + ("-tierB" if p[1] else ""))
def cpu_backend(request):
    """Tier A with blocks of 64 elements and automatic blocks, then tier B (compiled kernels) where emitted: with
    automatic blocks (arrays of 4096 elements and more) and with blocks of 64 (every array, each block a chunk's
    tail). A graph with no loop op stays on tiers A and B here (tier C's hot calls at their default, whatever
    SOT_CPU_TIER_C_HOT says: these tests pin what tiers A and B do)."""
    saved = (sot.config.backend, sot.config.cpu_block, sot.config.cpu_tier_b, sot.config.cpu_tier_c_hot)
    sot.config.backend = "cpu"
    sot.config.cpu_block, sot.config.cpu_tier_b = request.param
    sot.config.cpu_tier_c_hot = 64
    yield request.param
    (sot.config.backend, sot.config.cpu_block, sot.config.cpu_tier_b, sot.config.cpu_tier_c_hot) = saved


def chain(a, b):
    return (a * 2.0 + b) * (a - b) / (b * b + 1.0)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def broadcast_rows_cols(a, row, col):
    return np.exp(-(a - row) * (a - col)) + np.sqrt(np.abs(row)) * col


def three_d(x, row):
    return np.sin(x) * np.cos(row) + x * x - 1.0


def float32_chain(x):
    return (x * np.float32(1.5) + 2.0) * np.exp(-x * x)


def float16_chain(x):
    return x * x + x / 3.0 - 1.0


def int8_chain(x):
    return (x * 3 + 7) // 2 - x % 3


def int32_mixed(x, y):
    return (x * y + 1) * 0.5 - y


def uint16_shifts(u):
    return ((u << 2) ^ (u >> 1)) & 1023


def bool_logic(m, a):
    return np.logical_and(m, a > 0) | np.logical_not(a < -3)


def complex_chain(z):
    return np.exp(z * 1j) * np.negative(z) + z * z


def with_numpy_scalar(a):
    m = a.max()
    return np.exp(a - m) * 2.0 + m


def with_zero_d(a, s):
    return (a + s) * (a - s) + s


def two_outputs(a, b):
    s = a + b
    d = a - b
    return s * d, s / (d * d + 1.0)


def output_read_later(a, b):
    t = np.sqrt(a * a + b * b)
    u = t * 2.0 + 1.0
    return u.sum(axis=0), t.T, u


def chain_cut_by_view(a, row):
    t = a * 2.0 + row
    v = t[:, 1:]
    return (v * v - 1.0) * 3.0


def chain_around_inplace(a, b):
    t = a * b + 1.0
    t += b
    return t * t - a


def in_place_members(a, b):
    t = a * b + 1.0
    u = t * 0.5  # reads t before the change
    t *= b
    t -= 0.25
    t /= u + 2.0
    return t * t - a, u


def in_place_returned(a, b):
    t = a - b
    t += 1.0
    t *= t
    return t


def in_place_mixed_dtypes(x32, b64):
    t = x32 * np.float32(2.0)
    t += b64  # float64 loop, cast back to float32 (same_kind)
    t -= 1
    return t + x32


def in_place_read_later(a, b):
    t = a + b
    t += 1.0
    s = t.sum(axis=0)  # reads the changed t after the group
    return s, t * 2.0


def in_place_on_input(a, b):
    t = a * 2.0
    a += b  # an input: a visible change, not a member
    return t + a


def in_place_ints(i, j):
    t = i * 3
    t //= 2
    t %= 7
    t <<= 1
    t ^= j
    return t + 1


def strided_input(v):
    w = v[::3]
    return w * w + w * 2.0 - 1.0


def stencil_2d(u):
    return u[1:-1, 1:-1] + 0.1 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1])


def stencil_3d(u):
    c = u[1:-1, 1:-1, 1:-1]
    return c + 0.05 * (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
                       + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - 6.0 * c)


def stepped_slices(a):
    n = a.shape[1] // 2
    t = a[:, :2 * n:2] * 2.0
    return t - a[:, 1:2 * n:2] * 0.5 + 1.0


def slices_of_slices(a):
    t = a[1:, :] * 0.5
    return t + a[:-1, ::1][:, :] * a[1:, :][::1, :] - 1.0


def reversed_slices(a):
    t = a[::-1, 1:] * 2.0
    return t + a[:, :-1] - 1.0


def slice_of_intermediate(a, b):
    t = np.cumsum(a, axis=0)
    x = b * 2.0 + t
    return x * t[:, :] + 1.0


def slice_of_group_value(a):
    t = a * 2.0 + 1.0
    return t[1:, :] * a[:-1, :] - t[:-1, :]


def slice_ratio(u):
    return u[1:, :] / u[:-1, :] - 1.0


def powers(a):
    return a ** 3 + np.abs(a) ** 0.5 - (a * a + 1.0) ** -1.5 + a ** 2 * 0.5 + (a * 0.1) ** 1 - a ** -1


def empty_arrays(a):
    return a * 2.0 + a * a


# --- groups ending in reductions ------------------------------------------------------------------------------


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5) * 1.5 + 0.1


def full_sum(a):
    return np.sum(a * 2.0 + 1.0), (a * a - a).mean()


def rows_min_max(x):
    return np.min(x * x - 1.0, -1), (x * 3.0 - x).max(axis=-1)


def sum_of_vector(v):
    return (v * v + 1.0).sum(axis=-1), np.mean(np.sqrt(np.abs(v)) * 2.0, axis=0)


def reductions_not_fused(a):
    # over the first axis, over all axes for max, with keepdims over all axes: the NumPy calls as they are
    return (a * 2.0 + 1.0).sum(axis=0), (a - 1.0 * a).max(), (a + a * a).sum(keepdims=True)


def pooled_later(a, b):
    t = a * 2.0 + b
    u = a - b
    s = t.sum(axis=0) + u.sum(axis=0)  # t and u die in these opaque ops: released into the pool
    return (a * a - 1.0) * s, s  # a later output of their dtype and shape takes one, one stays


def donation(a, b):
    t = a * 2.0 + b
    s = t.sum(axis=0)
    return (t * t - 1.0) * s, t / 3.0 + s


# --- casts inside groups (x.astype(dtype): numpy.copyto(block, x, casting="unsafe"), astype's own cast) -------


def casts(a, i):
    f = (a * 3.0).astype(np.float32) + 1.0
    n = (a * 100.0).astype(np.int32) % 7
    b = (a > 0).astype(np.int8) * 2
    w = (i * 3).astype(np.int8) + 1
    return f, n, b, w


def cast_specials(x):
    # NaN and inf to int (invalid: eager's "invalid value encountered in cast"), 1e308 * 10 to float32
    return (x * 2.0).astype(np.int64) + 1, (x * 10.0).astype(np.float32) - 1.0


def cast_float16_bool(x):
    return ((x - 0.5).astype(np.float16) * 2).astype(bool) & (x > 0)


def cast_from_complex(z):
    return (z * 2.0).astype(np.float64) + 1.0


# --- selects (np.where(c, x, y), c boolean) and clips of float arrays inside groups ------------------------------


def select_chain(a, b):
    return np.where(a > b, a * 2.0, b - 1.0) * 0.5


def select_scalars(a):
    # Python scalars on either side; an int beside a float array
    return np.where(a > 0, a, 0.0) + np.where(a < 0, 1, a * a)


def select_broadcast(a, row, col):
    return np.where(col > 0, a * 2.0, row) - np.where(a > row, col, a)


def select_dtypes(x32, i):
    return np.where(x32 > 0, x32, 2.0) + 1, np.where(i > 0, i, 0.5) * 2


def select_reused_operand(a):
    t = a * 3.0
    return np.where(t > 1.0, 1.0, t) + 0.0


def clip_chain(a):
    return np.clip(a * 3.0, -1.0, 1.0) + a.clip(-2, 2) * 0.5


def clip_array_bounds(a, row):
    r = np.abs(row)
    return np.clip(a * 2.0, -r, r) * 2.0


def clip_int_and_nan(i, x):
    # an integer array (NumPy drops Python bounds outside its range first) is not fused; NaN and inf go through
    return np.clip(i * 2, -5, 5) + 1, np.clip(x * 1.0, -1.0, 1.0) + 0.5


# --- outputs written into dying intermediates (in place), floating-point flags then reported per op ----------------


def in_place_chain(a, b):
    t = np.cumsum(a, axis=-1)  # opaque: its result dies in the group below
    return (t * 2.0 + b) * t - 1.0


def in_place_overflow(a):
    t = np.cumsum(a, axis=-1)
    return np.exp(t * 50.0) - 1.0


def in_place_several_flags(a, z):
    # t / z: divide by zero and 0/0 (invalid) in divide; then sqrt of negatives (invalid in sqrt)
    t = np.cumsum(a, axis=-1)
    return np.sqrt(t / z - t) * 2.0


def in_place_rows(x):
    t = np.cumsum(x, axis=-1)
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def in_place_read_after(a):
    # u is stored before t's last read: t cannot take u
    t = np.cumsum(a, axis=-1)
    u = t * 3.0
    return u, u + t


ZEROS = np.where(np.arange(A.size).reshape(A.shape) % 7 == 0, 0.0, 1.5)

CASES = [
    case(in_place_chain, A, B),
    case(in_place_overflow, A),
    case(in_place_several_flags, A, ZEROS),
    case(in_place_rows, A),
    case(in_place_read_after, A),
    case(select_chain, A, B),
    case(select_scalars, A),
    case(select_broadcast, A, ROW, COL),
    case(select_dtypes, F32, I32),
    case(select_reused_operand, A),
    case(clip_chain, A),
    case(clip_chain, F32),
    case(clip_array_bounds, A, ROW),
    case(clip_int_and_nan, I32, MIXED),
    case(casts, A, I32),
    case(cast_specials, MIXED),
    case(cast_float16_bool, A),
    case(cast_from_complex, C128),
    case(chain, A, B),
    case(gelu, A),
    case(broadcast_rows_cols, A, ROW, COL),
    case(three_d, X3, ROW),
    case(float32_chain, F32),
    case(float16_chain, F16),
    case(int8_chain, I8),
    case(int32_mixed, I32, A[:20, :40] if A.shape[1] >= 40 else np.resize(A, (20, 40))),
    case(uint16_shifts, U16),
    case(bool_logic, BOOL, np.resize(A, (20, 40))),
    case(complex_chain, C128),
    case(with_numpy_scalar, A),
    case(with_zero_d, A, np.array(0.5)),
    case(two_outputs, A, B),
    case(output_read_later, A, B),
    case(chain_cut_by_view, A, ROW),
    case(chain_around_inplace, A, B),
    case(in_place_members, A, B),
    case(in_place_members, F32, F32 + 1),
    case(in_place_returned, A, B),
    case(in_place_mixed_dtypes, F32, F32.astype(np.float64)),
    case(in_place_read_later, A, B),
    case(in_place_on_input, A.copy(), B),
    case(in_place_ints, I32, I32 + 3),
    case(strided_input, V),
    case(empty_arrays, np.zeros((0, 4))),
    case(powers, A),
    case(powers, F32),
    case(powers, MIXED),
    case(powers, C128),
    case(stencil_2d, A),
    case(stencil_2d, F32),
    case(stencil_3d, X3),
    case(stencil_3d, np.asfortranarray(X3)),
    case(stepped_slices, A),
    case(stepped_slices, X3),
    case(slices_of_slices, A),
    case(reversed_slices, A),
    case(slice_of_intermediate, A, B),
    case(slice_of_group_value, A),
    case(slice_ratio, np.resize(MIXED, (30, 20))),
    case(softmax, A),
    case(softmax, F32),
    case(layernorm, X3),
    case(full_sum, A),
    case(full_sum, F32),
    case(full_sum, MIXED),
    case(rows_min_max, X3),
    case(sum_of_vector, V),
    case(sum_of_vector, np.full(1000, -0.0)),
    case(reductions_not_fused, A),
    case(donation, A, B),
]


@run_cases(CASES)
def test_cpu_chains_match_eager(fn, args, kwargs, graphs, breaks, fallbacks, cpu_backend):
    if cpu_backend[1]:
        # Tier B: compile the kernels first (into the disk cache), so that check()'s fresh translation loads
        # them at once and its second call runs them.
        _plan(fn, *args)
        sot._sot.graph.wait_for_kernels()
    check(fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, **kwargs)


def _plan(fn, *args):
    sot.reset()
    cap.clear(fn)
    t = sot.translate.new_translator(records=True)
    with cap.capture(t):
        fn(*args)
        value = fn(*args)
    graphs = [g for r in t.records() if r["transformed"] is not None for g in r["graphs"]]
    assert len(graphs) == 1
    return value, graphs[0]["compiled"].plan()


def test_plan_shows_fused_groups_and_kernels():
    sot.config.cpu_tier_b = False
    sot.config.cpu_block = 64
    value, plan = _plan(output_read_later, A, B)
    assert same(value, output_read_later(A, B))
    assert plan["backend"] == "cpu"
    kinds = [(g["kind"], g["op_names"]) for g in plan["groups"]]
    assert kinds[0] == ("fused", ["multiply", "multiply", "add", "sqrt", "multiply", "add"]), kinds
    fused = plan["groups"][0]
    # sqrt's result is read by the transpose and the product after it, u by the sum and the caller.
    assert len(fused["outputs"]) == 2 and fused["tier_a_runs"] == 2 and fused["op_by_op_runs"] == 0
    assert fused["kernel"].startswith("kernel k0 over [40, 37]\n") and "  e1 = multiply(e0, e0) : float64\n" in \
        fused["kernel"]
    assert [g["kind"] for g in plan["groups"][1:]] == ["opaque", "opaque"]


def test_matmul_is_a_library_call_and_a_single_op_a_tier_a_kernel():
    def f(a, b):
        return (a @ b.T) + 1.0

    value, plan = _plan(f, A, B)
    assert same(value, f(A, B))
    assert [(g["kind"], g["why"]) for g in plan["groups"]] == [
        ("opaque", "transpose: a view"), ("library", "matmul"), ("fused", "")]
    single = plan["groups"][2]
    assert single["tier_b_runs"] == 0 and single["tier_b"].startswith("not emitted: ")
    if sot.config.cpu_tier_b:
        assert single["tier_b"] == "not emitted: a single op (tier A runs NumPy's own loop for it)"
    assert single["kernel"].count(" = add(") == 1


def test_casts_are_fused_and_complex_ones_say_why():
    value, plan = _plan(casts, A, I32)
    assert same(value, casts(A, I32))
    fused = [g for g in plan["groups"] if g["kind"] == "fused"]
    # the three float64 chains of `a` in one group, the int32 chain of `i` in another
    assert [g["op_names"].count("astype") for g in fused] == [3, 1], plan["groups"]
    k = fused[0]
    assert "e3 = astype(e2) : float32" in k["kernel"] and ": int8\n" in fused[1]["kernel"]
    assert k["op_by_op_runs"] + k["tier_a_runs"] == 2 and not k["disabled"]
    if sot.config.cpu_tier_b:
        assert k["tier_b"].startswith("not emitted: ") and k["tier_b_runs"] == 0
    _, plan = _plan(cast_from_complex, C128)
    assert ("opaque", "astype: astype from complex (NumPy warns that it drops the imaginary part)") in [
        (g["kind"], g["why"]) for g in plan["groups"]]


def test_selects_and_clips_are_fused():
    value, plan = _plan(select_chain, A, B)
    assert same(value, select_chain(A, B))
    fused = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert [g["op_names"] for g in fused] == [["greater", "multiply", "subtract", "where", "multiply"]]
    assert "where(e2, e4, e6) : float64" in fused[0]["kernel"], fused[0]["kernel"]
    value, plan = _plan(clip_chain, A)
    assert same(value, clip_chain(A))
    fused = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert [g["op_names"] for g in fused] == [["multiply", "clip", "clip", "multiply", "add"]]
    assert all(g["op_by_op_runs"] + g["tier_a_runs"] + g["tier_b_runs"] == 2 and not g["disabled"] for g in fused)


def test_one_op_on_a_dying_matmul_result_runs_in_place_as_the_reference_does():
    def biased(a, b):
        return a @ b + 0.5

    def scaled_cumsum(v):
        return np.cumsum(v) * 0.5

    a = np.random.default_rng(3).standard_normal((300, 300))
    value, plan = _plan(biased, a, a)
    assert same(value, biased(a, a))
    g = plan["groups"][-1]
    # the product dies at the sum: written in place (no new array), by the kernel on NumPy 2, else op by op
    # as the reference does (automatic blocks: these small arrays run op by op first)
    assert g["kind"] == "fused"
    if not sot.config.cpu_block:
        assert g["op_by_op_runs"] == 2 and g["last_fallback"] == "fits in one block"
    elif NUMPY2:
        assert g["in_place_runs"] == 1 and g["tier_a_runs"] == 2, g
    else:
        assert g["op_by_op_runs"] == 2 and g["last_fallback"] == "one op on a dying matmul result: in place"
    # other producers: the op is a kernel (blocks on every core)
    v = np.random.default_rng(3).standard_normal(600_000)
    value, plan = _plan(scaled_cumsum, v)
    assert same(value, scaled_cumsum(v))
    g = plan["groups"][-1]
    assert g["op_by_op_runs"] == 0 and g["tier_a_runs"] == 2


NUMPY2 = int(np.__version__.split(".")[0]) >= 2


@pytest.mark.parametrize("state", ["warn", "print", "ignore"])
def test_in_place_runs_report_each_ops_flags_as_eager(state, capfd):
    """An output written into a dying input cannot run op by op after a flag (its input is gone): NumPy 2 is
    asked to report each op's flags as after that op's own loop (NumPy 1.x: no such call, no run in place).
    Tier A only: a run on tier B never writes in place (its flags are not per op)."""
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    for fn, args in ((in_place_overflow, (A,)), (in_place_several_flags, (A, ZEROS))):
        with np.errstate(all=state), warnings.catch_warnings(record=True) as plain:
            warnings.simplefilter("always")
            expected = fn(*args)
        plain_out = capfd.readouterr().out
        sot.reset()
        cap.clear(fn)
        t = sot.translate.new_translator(records=True)
        for _ in range(3):
            with np.errstate(all=state), warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                with cap.capture(t):
                    value = fn(*args)
            assert same(value, expected)
            assert [(w.category, str(w.message)) for w in got] == [(w.category, str(w.message)) for w in plain]
            assert capfd.readouterr().out == plain_out
        groups = [g for r in t.records() for gr in r["graphs"] for g in gr["compiled"].plan()["groups"]]
        fused = [g for g in groups if g["kind"] == "fused"]
        # the first run checks dtypes and never writes in place; the later ones do (NumPy 2)
        assert fused[0]["in_place_runs"] == (2 if NUMPY2 else 0), fused


def in_place_then_reduce(a):
    t = np.cumsum(a, axis=-1)  # dies in the group below, which writes y into it
    y = t * 1.0
    return y, y.sum(axis=-1)  # the row sums overflow: NumPy says "overflow encountered in reduce"


def test_in_place_reduction_flags_are_reported_as_numpys_reduce():
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    a = np.full((7, 1000), 1e305)
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        expected = in_place_then_reduce(a)
    assert [str(w.message) for w in plain] == ["overflow encountered in reduce"]
    sot.reset()
    cap.clear(in_place_then_reduce)
    t = sot.translate.new_translator(records=True)
    for _ in range(3):
        with warnings.catch_warnings(record=True) as got, cap.capture(t):
            warnings.simplefilter("always")
            value = in_place_then_reduce(a)
        assert same(value, expected) and [str(w.message) for w in got] == [str(w.message) for w in plain]
    fused = [g for r in t.records() for gr in r["graphs"] for g in gr["compiled"].plan()["groups"]
             if g["kind"] == "fused"]
    assert fused[0]["in_place_runs"] == (2 if NUMPY2 else 0), fused


def test_in_place_flag_as_error_raises_as_eager():
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning) as plain:
            in_place_overflow(A)
        sot.reset()
        cap.clear(in_place_overflow)
        t = sot.translate.new_translator(records=True)
        for _ in range(3):
            with pytest.raises(RuntimeWarning) as got, cap.capture(t):
                in_place_overflow(A)
            assert str(got.value) == str(plain.value)


def test_in_place_plan_and_donors():
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    value, plan = _plan(in_place_chain, A, B)
    assert same(value, in_place_chain(A, B))
    (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert g["in_place_runs"] == (1 if NUMPY2 else 0) and g["op_by_op_runs"] == 0
    # u is computed before t's last read (t cannot take it), u + t after it (t can)
    value, plan = _plan(in_place_read_after, A)
    assert same(value, in_place_read_after(A))
    (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert g["in_place_runs"] == (1 if NUMPY2 else 0)


def test_fortran_order_input_runs_op_by_op_with_eager_layout():
    af = np.asfortranarray(A)
    if sot.config.cpu_tier_b:
        _plan(chain, af, af)
        sot._sot.graph.wait_for_kernels()
    value, plan = _plan(chain, af, af)
    expected = chain(af, af)
    assert same(value, expected) and value.strides == expected.strides
    g = plan["groups"][0]
    # (with automatic blocks the small arrays run op by op before their layout is looked at, unless the
    # compiled kernel is ready: it takes small arrays too)
    strided = sot.config.cpu_block or sot.config.cpu_tier_b
    why = "an input whose strides are not in C order" if strided else "fits in one block"
    assert g["op_by_op_runs"] == 2 and g["last_fallback"] == why


def _warnings_of(fn, *args, translated):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        if translated:
            t = sot.translate.new_translator()
            with cap.capture(t):
                value = fn(*args)
        else:
            value = fn(*args)
    return value, [(w.category, str(w.message)) for w in got]


def log_then_divide(x):
    return np.log(x) * 2.0 + 1.0 / (x * 0.0) + np.sqrt(x)


@pytest.mark.parametrize("state", ["warn", "ignore", "print"])
def test_floating_point_errors_as_eager(state, capfd):
    sot.reset()
    cap.clear(log_then_divide)
    for _ in range(2):
        with np.errstate(all=state):
            plain, plain_warnings = _warnings_of(log_then_divide, MIXED, translated=False)
            plain_out = capfd.readouterr().out
            got, got_warnings = _warnings_of(log_then_divide, MIXED, translated=True)
            got_out = capfd.readouterr().out
        assert same(got, plain)
        assert got_warnings == plain_warnings and got_out == plain_out
    if state == "warn":
        assert len(plain_warnings) >= 4  # log: divide, invalid; divide; sqrt: invalid; ...


def test_no_floating_point_error_runs_tier_a_under_warn():
    sot.config.cpu_tier_b = False
    sot.config.cpu_block = 64
    value, plan = _plan(chain, A, B)
    assert same(value, chain(A, B))
    assert plan["groups"][0]["tier_a_runs"] == 2


def test_underflow_alone_is_not_reported_by_default():
    def f(x):
        return np.exp(x * -1000.0) * 2.0

    sot.config.cpu_tier_b = False
    sot.config.cpu_block = 64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, plan = _plan(f, np.abs(A) + 1.0)
    assert plan["groups"][0]["tier_a_runs"] == 2
    with np.errstate(under="warn"):
        _, got = _warnings_of(f, np.abs(A) + 1.0, translated=True)
        state_after = np.geterr()
    assert got == [(RuntimeWarning, "underflow encountered in exp")]
    assert state_after["under"] == "warn"  # the state the group ran under is restored


def test_profile_times_groups():
    sot.config.profile = True
    try:
        _, plan = _plan(chain, A, B)
    finally:
        sot.config.profile = False
    assert plan["groups"][0]["seconds"] > 0


def test_large_arrays_cross_many_default_blocks():
    sot.config.cpu_tier_b = False
    big = rng.standard_normal((300, 1001))
    row = rng.standard_normal(1001)
    sot.config.cpu_block = 0
    value, plan = _plan(broadcast_rows_cols, big, row, big[:, :1].copy())
    assert same(value, broadcast_rows_cols(big, row, big[:, :1].copy()))
    g = plan["groups"][0]
    assert g["kind"] == "fused" and g["tier_a_runs"] == 2, g


def test_small_domains_run_op_by_op_with_automatic_blocks():
    """With automatic blocks, a group whose arrays fit in cache at once runs its ops one by one (blocks would
    run the same loops with more overhead); with a block size set it runs in blocks."""
    sot.config.cpu_block = 0
    sot.config.cpu_tier_b = False
    value, plan = _plan(chain, A, B)
    g = plan["groups"][0]
    assert same(value, chain(A, B))
    assert (g["tier_a_runs"], g["op_by_op_runs"], g["last_fallback"]) == (0, 2, "fits in one block")


def test_cpu_options_are_checked():
    with pytest.raises(sot.ConfigError):
        sot.config.cpu_block = -1
    with pytest.raises(ValueError):
        sot._sot.graph.cpu_options(block_elements=-3)
    assert sot._sot.graph.cpu_options()["block_elements"] == sot.config.cpu_block


def test_intermediates_stay_in_blocks():
    """Peak memory of a fused chain on 2M float64 (16 MB): the output and block-sized temporaries, not one
    array per intermediate."""
    import tracemalloc

    x = rng.standard_normal(2_000_000)
    sot.config.cpu_block = 0
    sot.config.cpu_tier_b = False
    sot.reset()
    t = sot.translate.new_translator(records=True)
    with cap.capture(t):
        gelu(x)
    (graph,) = [g for r in t.records() for g in r["graphs"]]
    assert graph["compiled"].plan()["groups"][0]["tier_a_runs"] == 1
    tracemalloc.start()
    try:
        result = graph["compiled"](x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert same(result, gelu(x))
    assert peak < 1.3 * x.nbytes, f"peak {peak} bytes for arrays of {x.nbytes}"


def log_chain(x):
    return np.log(x) * 2.0 + x


@pytest.mark.parametrize("where", [0, 500, 999])
def test_error_in_any_block_on_any_thread_warns_once(where):
    """Blocks run on 4 threads; a NaN made in one block (the first, a middle one or the last) is reported once,
    as eager NumPy reports it, whichever thread ran that block."""
    saved = sot.config.cpu_threads
    sot.config.cpu_threads, sot.config.cpu_block = 4, 64
    try:
        x = np.abs(V) + 1.0
        x[where] = -1.0
        sot.reset()
        for _ in range(3):
            plain, plain_warnings = _warnings_of(log_chain, x, translated=False)
            got, got_warnings = _warnings_of(log_chain, x, translated=True)
            assert same(got, plain) and got_warnings == plain_warnings
        assert plain_warnings == [(RuntimeWarning, "invalid value encountered in log")]
    finally:
        sot.config.cpu_threads = saved


def test_an_output_nobody_holds_is_reused_and_one_held_is_not():
    """Outputs of 1 MiB and more are kept by the kernel; the next run writes into one only when nothing else
    holds it (no variable, view or weak reference), sparing a fresh allocation's page faults."""
    import weakref

    sot.config.cpu_block = 0
    x = rng.standard_normal(400_000)
    y = rng.standard_normal(400_000)
    sot.reset()
    t = sot.translate.new_translator()

    def run(*args):
        with cap.capture(t):
            return chain(*args)

    r1 = run(x, y)
    address = r1.ctypes.data
    del r1
    r2 = run(y, x)  # r1's memory, nobody holds it
    assert r2.ctypes.data == address and same(r2, chain(y, x))
    r3 = run(x, y)  # r2 is held: a new array, r2 unchanged
    assert r3.ctypes.data != address and same(r2, chain(y, x)) and same(r3, chain(x, y))
    view = r3[::2]
    del r3
    r4 = run(y, x)  # r3 is held by its view
    assert same(view, chain(x, y)[::2]) and same(r4, chain(y, x))
    ref = weakref.ref(r4)
    del r4
    r5 = run(x, y)  # r4 has a weak reference: not written (it is let go)
    assert same(r5, chain(x, y))
    assert ref() is None or same(ref(), chain(y, x))
    r5[:] = 0.0
    kept = weakref.ref(r5)
    del r5
    r6 = run(x, y)
    assert same(r6, chain(x, y)) and (kept() is None or not kept().any())


def test_report_explain_and_drawing_show_groups():
    sot.config.cpu_tier_b = False
    """explain(), the %%sot report (text and HTML) and the graph drawing show the fusion groups, the tier each
    ran on and the kernels."""
    from sot.report import build

    sot.config.cpu_block = 64
    text = str(sot.explain(output_read_later, A, B))
    assert "cpu: 3 groups, 1 fused (tier A 1 run, tier B 0, op by op 0)" in text
    assert "group 0 fused: multiply, multiply, add, sqrt, multiply, add - tier A 1, tier B 0, op by op 0" in text
    assert "  tier B: not emitted: tier B is off (SOT_CPU_TIER_B=0)" in text
    assert "group 1 opaque: sum - sum: keyword arguments" in text and "kernel k0 over [40, 37]" in text

    sot.reset()
    t = sot.translate.new_translator(records=True)
    with cap.capture(t):
        output_read_later(A, B)
    report = build(t.records())
    (graph,) = [g for f in report.functions for g in f.graphs]
    assert graph.plan["backend"] == "cpu" and len(graph.plan["groups"]) == 3
    render = pytest.importorskip("sot.render")
    assert "graph of output_read_later: cpu: 3 groups, 1 fused" in render.to_text(report)
    full = render.to_text(report, render.Options(graph=True))
    assert "  store b2 <- e5" in full
    html = render.to_html(report, render.Options(graph=True))
    assert "cpu: 3 groups, 1 fused (tier A 1 run, tier B 0, op by op 0)" in html
    dot = render.graph_dot(graph.json, "g", graph.plan)
    assert 'subgraph cluster_k0 { label="kernel k0 (fused)"' in dot


# ---- tier B: kernels compiled to machine code ----------------------------------------------------------------


def float32_arith(a, b):
    return (a * 1.5 + b) * (a - b) / (b * b + 3) - np.sqrt(np.abs(a))


def _tier_b_plan(fn, *args):
    """Runs fn translated until its kernel is compiled; the plan of its one graph after one more call."""
    sot.config.cpu_tier_b = True
    _plan(fn, *args)
    sot._sot.graph.wait_for_kernels()
    return _plan(fn, *args)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tier_b_runs_ieee_exact_chains_bit_exact(dtype):
    a = rng.standard_normal(300_000).astype(dtype)
    b = rng.standard_normal(300_000).astype(dtype)
    for fn in (chain, float32_arith, in_place_members, in_place_returned):
        value, plan = _tier_b_plan(fn, a, b)
        g = plan["groups"][0]
        assert g["tier_b"].startswith("ready"), g["tier_b"]
        assert g["tier_b_runs"] >= 1 and same(value, fn(a, b)), (fn.__name__, g)


def small_row_sums(c):
    return (c * 2.0 + 1.0).sum(axis=-1)


@pytest.mark.parametrize("n", [1, 3, 100, 4095])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tier_b_runs_small_chains_and_one_op_or_a_reduction_runs_op_by_op(n, dtype):
    """Below a block's minimum (4096 elements) a ready compiled kernel runs a chain of two calls or more
    (a 3-element 11-op chain costs a third of its ops one by one); a single op and a kernel that reduces run op
    by op there, as before. Every result bit-exact with eager NumPy's, on 1-D and 2-D arrays, from the first call
    and at a cache hit, with other values."""
    sot.config.cpu_block = 0
    a, b = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    for fn in (chain, float32_arith):
        value, plan = _tier_b_plan(fn, a, b)
        (g,) = plan["groups"]
        assert g["tier_b"].startswith("ready"), g["tier_b"]
        # (its first run is on tier A, which checks the dtypes)
        assert g["tier_b_runs"] == 1 and g["op_by_op_runs"] == 0 and same(value, fn(a, b)), (fn.__name__, g)
        c, d = (rng.standard_normal((n, 2)).astype(dtype) for _ in range(2))
        check(fn, c, d, graphs=1, breaks=0, variants=[((c * 3.0, d - 1.0), {}), ((a, b), {})])
    one, plan = _tier_b_plan(single_op, a, b)
    assert plan["groups"][0]["op_by_op_runs"] == 2 and same(one, single_op(a, b))
    c = rng.standard_normal((n, 3)).astype(dtype)
    reduced, plan = _tier_b_plan(small_row_sums, c)
    (g,) = plan["groups"]
    assert g["kind"] == "fused" and g["op_by_op_runs"] == 2 and same(reduced, small_row_sums(c)), g


def single_op(a, b):
    return a + b


@pytest.mark.parametrize("state", ["warn", "ignore", "raise"])
def test_small_tier_b_runs_report_floating_point_errors_as_eager(state):
    """A small run on tier B that raises a floating-point flag is done again op by op, which warns, ignores or
    raises as eager NumPy does (its outputs are new arrays: nothing was written in place)."""
    sot.config.cpu_block = 0
    x = np.array([1.0, 0.0, -1.0])
    _tier_b_plan(log_then_divide, np.array([1.0, 2.0, 3.0]))
    for _ in range(2):
        with np.errstate(all=state):
            try:
                plain = ("value", _warnings_of(log_then_divide, x, translated=False))
            except FloatingPointError as exc:
                plain = ("raised", str(exc))
            try:
                got = ("value", _warnings_of(log_then_divide, x, translated=True))
            except FloatingPointError as exc:
                got = ("raised", str(exc))
        assert got[0] == plain[0]
        if got[0] == "value":
            assert same(got[1][0], plain[1][0]) and got[1][1] == plain[1][1]
        else:
            assert got[1] == plain[1]


def unused_invalid(a, b):
    a * 0.0 / 0.0  # nothing reads it: eager NumPy still warns
    return a + b * 2.0 - 1.0


def test_values_nothing_reads_keep_their_floating_point_flags():
    """A compiled kernel would lose an unused value's operation (the C++ compiler removes it, and its flags
    with it): such a group stays on tier A, which warns as eager NumPy does, also once tier B is ready."""
    a, b = np.ones(300_000), rng.standard_normal(300_000)
    value, plan = _tier_b_plan(unused_invalid, a, b)
    (g,) = plan["groups"]
    assert g["tier_b"] == "not emitted: multiply of a value nothing reads (its floating-point flags)", g
    for state in ("warn", "raise"):
        with np.errstate(invalid=state), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                got = ("value", sot.jit(unused_invalid)(a, b))
            except FloatingPointError as e:
                got = ("raised", str(e))
        with np.errstate(invalid=state), warnings.catch_warnings(record=True) as caught_plain:
            warnings.simplefilter("always")
            try:
                want = ("value", unused_invalid(a, b))
            except FloatingPointError as e:
                want = ("raised", str(e))
        assert got[0] == want[0] and (got[0] == "raised" or same(got[1], want[1]))
        assert [str(w.message) for w in caught] == [str(w.message) for w in caught_plain]


def sqrt_then_sign(a):
    return np.sqrt(a) * np.sign(a)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_numpy_loop_keeps_the_flags_raised_before_it(dtype):
    """NumPy's sign loop clears the thread's floating-point flags when it ends; called inside a compiled kernel
    after sqrt of a negative value, it must not hide sqrt's invalid flag (a lost warning, found by the program
    fuzzer): every call warns as eager NumPy does, also once tier B is ready."""
    a = rng.standard_normal(300_000).astype(dtype)
    a[7] = -1.0
    value, plan = _tier_b_plan(sqrt_then_sign, a)
    (g,) = plan["groups"]
    assert g["tier_b"].startswith("ready" if NUMPY2 else "not emitted"), g["tier_b"]
    translated = sot.jit(sqrt_then_sign)
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = translated(a)
        with warnings.catch_warnings(record=True) as caught_plain:
            warnings.simplefilter("always")
            want = sqrt_then_sign(a)
        assert same(got, want)
        assert [str(w.message) for w in caught] == [str(w.message) for w in caught_plain] != []


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tier_b_takes_numpy_float_constants(dtype):
    scalars = (np.float32(1.5), np.float16(3.0)) if dtype == np.float32 else (np.float64(0.1), np.float32(1.5))
    fn = lambda a, b: (a * scalars[0] + b) * (a - scalars[1]) + np.maximum(a, scalars[0])  # noqa: E731
    a = rng.standard_normal(300_000).astype(dtype)
    b = rng.standard_normal(300_000).astype(dtype)
    value, plan = _tier_b_plan(fn, a, b)
    g = plan["groups"][0]
    assert same(value, fn(a, b))
    if NUMPY2:  # the NumPy scalars are the graph's (closure) values, read at each run
        assert g["tier_b"].startswith("ready") and g["tier_b_runs"] >= 1, g
        other = tuple(np.float32(2.5) if isinstance(x, np.float32) else type(x)(-0.75) for x in scalars)
        scalars = other  # noqa: F841 (the closure reads it)
        assert same(sot.jit(fn)(a, b), fn(a, b))


def masked_chain(a, b):
    # comparisons (NaN: false, no flag), a select, logic on booleans, a boolean output
    m = (a > b) & (a * 2.0 <= 1.0)
    return np.where(m, a * b, b - 1.0) * 0.5, m | (b < -1.0), np.logical_not(a >= 0.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tier_b_emits_comparisons_selects_and_boolean_logic(dtype):
    a = rng.standard_normal(300_000).astype(dtype)
    b = rng.standard_normal(300_000).astype(dtype)
    a[::97] = np.nan
    b[::89] = np.nan
    for fn in (masked_chain, mandelbrot_like):
        value, plan = _tier_b_plan(fn, a, b)
        g = plan["groups"][0]
        assert g["tier_b"].startswith("ready"), g["tier_b"]
        assert g["tier_b_runs"] >= 1 and g["op_by_op_runs"] == 0 and same(value, fn(a, b)), (fn.__name__, g)


def mandelbrot_like(zr, zi):
    r = zr * zr - zi * zi + 0.25
    i = 2.0 * zr * zi - 0.5
    return r, i, r * r + i * i < 4.0


def nan_mask_chain(a):
    return np.isnan(a * 2.0) | (a > 0.5)


def test_tier_b_is_not_emitted_where_it_could_differ():
    _, plan = _tier_b_plan(nan_mask_chain, A)
    assert plan["groups"][0]["tier_b"] == "not emitted: isnan (NumPy's loop is called only on the kernel's float type)"
    _, plan = _tier_b_plan(int8_chain, I8)
    assert plan["groups"][0]["tier_b"] == "not emitted: int8 (tier B emits float32 and float64 kernels)"
    # A scalar the graph computes: read at each run on NumPy 2; on 1.x its value could change the result's dtype.
    _, plan = _tier_b_plan(with_numpy_scalar, A)
    fused = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert fused[0]["tier_b"].startswith("ready" if NUMPY2 else "not emitted: a scalar operand"), fused
    sot.config.cpu_tier_b = False
    sot.reset()
    _, plan = _plan(chain, A, B)
    assert plan["groups"][0]["tier_b"] == "not emitted: tier B is off (SOT_CPU_TIER_B=0)"


def divide_chain(a, b):
    return (a + 1.0) / (b - b) * 2.0


def test_tier_b_floating_point_errors_as_eager():
    a = np.abs(V) + 1.0
    with np.errstate(all="ignore"):
        _tier_b_plan(divide_chain, a, a)
    sot.config.cpu_block = 0
    for state in ("warn", "ignore"):
        with np.errstate(all=state):
            plain, plain_warnings = _warnings_of(divide_chain, a, a, translated=False)
            got, got_warnings = _warnings_of(divide_chain, a, a, translated=True)
        assert same(got, plain) and got_warnings == plain_warnings, state
    assert plain_warnings == [] and len(_warnings_of(divide_chain, a, a, translated=False)[1]) == 1


def transcendental_chain(a, b):
    return np.exp(-a * a) * np.cos(3.0 * b) + np.log1p(np.abs(b)) - np.tanh(a) * np.arcsin(b * 0.25)


def maximum_clip_power(a, b):
    return np.clip(np.maximum(a, 0.01 * a) - np.minimum(b, 0.5), -1.0, 2.0) * np.power(a, 3.0) + np.fmax(a, b)


def loops_of_inputs(a, b):
    return np.exp(a) * 2.0 + np.arctan2(b, a) - np.hypot(a, 1.5)


def _specials(n, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(n).astype(dtype) * 3
    x[::97] = np.nan
    x[::89] = np.inf
    x[::83] = -np.inf
    x[::79] = -0.0
    x[::73] = 0.0
    x[::71] = 700.0
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tier_b_calls_numpy_loops_bit_exact(dtype):
    """Transcendental functions, maximum/minimum/clip/fmax and power run as NumPy's own loops inside the compiled
    kernel (on chunk arrays, scalars with stride 0): eager NumPy's bits, NaN, inf and signed zeros included, at
    lengths whose tail is not a whole SIMD vector; then again with other values and lengths."""
    sot.config.cpu_block = 0
    for fn in (transcendental_chain, maximum_clip_power, loops_of_inputs):
        a, b = _specials(300_003, dtype, 1), _specials(300_003, dtype, 2)
        with np.errstate(all="ignore"):
            value, plan = _tier_b_plan(fn, a, b)
            g = plan["groups"][0]
            if NUMPY2:
                assert g["tier_b"].startswith("ready") and g["tier_b_runs"] >= 1, (fn.__name__, g)
            else:  # NumPy 1.24's loop access gives other loops than its ufunc calls run
                assert "NumPy 1.x: its loop access gives other loops" in g["tier_b"], g["tier_b"]
            assert same(value, fn(a, b)), fn.__name__
            for n, seed in ((65_537, 5), (200_064, 6)):
                c, d = _specials(n, dtype, seed), _specials(n, dtype, seed + 1)
                assert same(sot.jit(fn)(c, d), fn(c, d)), (fn.__name__, n)


def log_sqrt_chain(a):
    return np.log(a - 1.0) * 2.0 + np.sqrt(a)


def test_tier_b_numpy_loop_flags_as_eager():
    """A NumPy loop's floating-point flags (log of negatives: invalid, of zero: divide) make the group run op by op
    under "warn", as eager NumPy warns; ignored, the compiled kernel's results stand."""
    a = np.abs(_specials(100_000, np.float64, 3))
    a[::7] = 0.5
    a[::11] = 1.0
    assert len(_tier_b_warnings_as_eager(log_sqrt_chain, a)) == 2  # log: divide (of 0), invalid (of < 0)


def _tier_b_warnings_as_eager(fn, *args):
    """Compiles fn's kernels, then checks a translated run's value and warnings against a plain run's under "warn"
    and "ignore"; the plain run's warnings under "warn"."""
    with np.errstate(all="ignore"):
        _tier_b_plan(fn, *args)
    sot.config.cpu_block = 0
    for state in ("warn", "ignore"):
        with np.errstate(all=state):
            plain, plain_warnings = _warnings_of(fn, *args, translated=False)
            got, got_warnings = _warnings_of(fn, *args, translated=True)
        assert same(got, plain) and got_warnings == plain_warnings, state
    with np.errstate(all="warn"):
        return _warnings_of(fn, *args, translated=False)[1]


def test_tier_b_numpy_loops_of_rows_run_tier_a():
    """A kernel calling NumPy's loops on rows (slices) runs on tier A: tier B would call the loops per row."""
    u = rng.standard_normal((300, 400))
    fn = lambda u: np.exp(u[1:, :-1] * 0.5) + u[:-1, 1:] * 2.0  # noqa: E731
    value, plan = _tier_b_plan(fn, u)
    (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert g["tier_b"].startswith("ready" if NUMPY2 else "not emitted") and g["tier_b_runs"] == 0, g
    assert g["tier_a_runs"] == 2 and same(value, fn(u))


def test_tier_b_strided_input_runs_tier_a():
    v = rng.standard_normal(600_000)
    _, plan = _tier_b_plan(chain, v[::2], v[1::2])
    g = plan["groups"][0]
    assert g["tier_b"].startswith("ready") and g["tier_b_runs"] == 0 and g["tier_a_runs"] + g["op_by_op_runs"] == 2
    assert same(_plan(chain, v[::2], v[1::2])[0], chain(v[::2], v[1::2]))


def test_error_of_the_first_graph_run_in_a_process():
    """A step that raises in the first graph a fresh process runs: its error reaches the caller (releasing the
    frame's values, whose buffer pool looks numpy.ndarray up once, must not clear it)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, sot
        def f(x):
            y = x * 2.0
            x += y
            return y
        x = np.ones(4)
        x.flags.writeable = False
        try:
            sot.jit(f, backend="cpu")(x)
        except ValueError as e:
            print("ValueError", e)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ValueError output array is read-only"), done.stdout


def test_tier_b_warm_start_loads_from_the_disk_cache(tmp_path):
    """Another process with the same cache folder loads the compiled kernel on its first call."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, sot
        from sot import capture as cap
        sot.config.backend = "cpu"
        def f(a, b):
            return (a * 2.0 + b) * (a - b) / (b * b + 1.0)
        a = np.arange(200_000, dtype=np.float64); b = a[::-1].copy()
        t = sot.translate.new_translator(records=True)
        for _ in range(2):
            with cap.capture(t):
                r = f(a, b)
        sot._sot.graph.wait_for_kernels()
        (g,) = t.records()[0]["graphs"]
        p = g["compiled"].plan()["groups"][0]
        assert np.array_equal(r, f(a, b))
        print(p["tier_b"])
    """)
    env = dict(os.environ, SOT_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().startswith("ready (compiled in") or first.stdout.strip() == "compiling"
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    status = second.stdout.strip()
    assert status.startswith("ready (loaded from the disk cache in ") and status.endswith(" ms)"), status
    assert sorted(p.suffix for p in (tmp_path / "kernels").iterdir()) == [".cpp", ".so"]


def squares(x, y, z):
    return (x - y) ** 2 + (y - z) ** 2.0 * 0.5 - z ** 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128])
def test_power_of_two_fuses_as_square(dtype):
    """``x ** 2`` of a float or complex array is the np.square NumPy itself runs for it: one group, eager's bits,
    and an overflow reported in ``square``'s words as eager's (the group runs op by op then)."""
    sot.config.cpu_block = 64
    x, y, z = (np.resize(V, 700).astype(dtype) * s for s in (1.0, 2.0, 3.0))
    value, plan = _plan(squares, x, y, z)
    assert same(value, squares(x, y, z))
    (g,) = plan["groups"]
    assert g["kind"] == "fused" and g["op_names"].count("power") == 3 and "square(" in g["kernel"], g
    big = x.copy()
    big[5] = {np.float16: 1e3, np.float32: 1e30}.get(dtype, 1e200)
    with np.errstate(over="warn"):
        plain, plain_warnings = _warnings_of(squares, big, y, z, translated=False)
        got, got_warnings = _warnings_of(squares, big, y, z, translated=True)
    assert same(got, plain) and got_warnings == plain_warnings and plain_warnings


def test_power_of_floats_is_fused_and_of_ints_and_unknown_exponents_is_not():
    def f(x, n):
        return x ** 3 + 1.0, n ** 2 + 1, x ** 1 - 1.0

    sot.config.cpu_block = 64
    n = np.arange(700)
    value, plan = _plan(f, V[:700], n)
    assert same(value, f(V[:700], n))
    # x ** 3 is np.power(x, 3); the integer power and x ** 1 (no sample tells its ufunc) stay opaque, and each
    # `+ 1`/`- 1` after them is a one-op tier A kernel
    assert [(g["kind"], g["op_names"]) for g in plan["groups"]] == [
        ("fused", ["power", "add"]), ("opaque", ["power"]), ("fused", ["add"]), ("opaque", ["power"]),
        ("fused", ["subtract"])], plan["groups"]


def scalar_cast_overflow(p0, p3):
    return p3 / p0 - True, (0 + p3) * p0


@pytest.mark.parametrize("n", [0, 1, 700])
def test_scalar_cast_warning_on_empty_and_full_domains(n):
    """Found by the program fuzzer on the cpu backend: NumPy warns "overflow encountered in cast" converting
    1e300 to float32 even when the array is empty, where no block runs; an empty domain runs op by op."""
    x = np.ones(n, dtype=np.float32)
    for _ in range(2):
        with np.errstate(all="warn"):
            plain, plain_warnings = _warnings_of(scalar_cast_overflow, 1e300, x, translated=False)
            got, got_warnings = _warnings_of(scalar_cast_overflow, 1e300, x, translated=True)
        # (NumPy 1.x's value-based promotion computes in float64: nothing to warn about there)
        assert same(got, plain) and got_warnings == plain_warnings and (plain_warnings or LEGACY)


def test_reductions_end_fused_groups_and_run_in_blocks():
    """A group ends in a sum, mean, max or min over the last axis (blocks of whole rows, each row reduced by
    NumPy's own reduce) or a sum or mean over all axes (in NumPy's summation order); both run in tier A."""
    sot.config.cpu_tier_b = False
    sot.config.cpu_block = 64
    value, plan = _plan(softmax, A)
    assert same(value, softmax(A))
    fused = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert [g["op_names"] for g in fused] == [["subtract", "exp", "sum"], ["true_divide"]]
    assert fused[0]["tier_a_runs"] == 2 and fused[0]["op_by_op_runs"] == 0, fused[0]
    assert "= sum over the last axis, keepdims of e3 (add.reduce) : float64" in fused[0]["kernel"]
    for fn, arg in ((full_sum, A), (full_sum, F32), (sum_of_vector, V), (rows_min_max, X3), (layernorm, X3)):
        value, plan = _plan(fn, arg)
        assert same(value, fn(arg))
        fused = [g for g in plan["groups"] if g["kind"] == "fused"]
        assert fused and all(g["tier_a_runs"] == 2 and g["op_by_op_runs"] == 0 for g in fused), (fn, fused)
        assert fused[0]["op_names"][-1] in ("sum", "mean", "min", "max"), fused


def test_reductions_not_fused_say_why():
    sot.config.cpu_block = 64
    _, plan = _plan(reductions_not_fused, A)
    whys = [g["why"] for g in plan["groups"] if g["kind"] == "opaque"]
    assert "sum: keyword arguments" in whys and "max: a scalar result" in whys, whys


@pytest.mark.parametrize("shape", [(1000,), (7, 1000)])
def test_overflow_in_a_fused_sum_warns_and_raises_as_eager(shape):
    def f(x):
        return (x * 1.0 + 0.0).sum(axis=-1)

    sot.config.cpu_block = 64
    x = np.full(shape, 1e306)
    for state in ("warn", "raise", "warn"):
        sot.reset()
        cap.clear(f)
        for _ in range(2):
            with np.errstate(all=state):
                if state == "raise":
                    with pytest.raises(FloatingPointError) as plain:
                        f(x)
                    t = sot.translate.new_translator()
                    with pytest.raises(FloatingPointError) as got, cap.capture(t):
                        f(x)
                    assert str(got.value) == str(plain.value)
                    continue
                plain, plain_warnings = _warnings_of(f, x, translated=False)
                got, got_warnings = _warnings_of(f, x, translated=True)
            assert same(got, plain) and got_warnings == plain_warnings == [
                (RuntimeWarning, "overflow encountered in reduce")]


@pytest.mark.parametrize("bufsize", [1024, 8192, 65536])
def test_full_sums_follow_numpy_order_for_any_buffer_size(bufsize):
    """The summation order is probed once per buffer size (NumPy 1.x sums in chunks of it): values over sixteen
    orders of magnitude, so that another order of additions would give another sum."""
    def f(x):
        return np.sum(x * 1.0 + 0.0), (x * x).mean()

    sot.config.cpu_tier_b = False
    sot.config.cpu_block = 4096
    r = np.random.default_rng(bufsize)
    for n in (300_007, 1 << 20):
        for dtype in (np.float64, np.float32):
            x = (r.standard_normal(n) * 10.0 ** r.uniform(-8, 8, n)).astype(dtype)
            # and rows longer than a 1024 buffer: NumPy 1.x chunks each row at the buffer size
            for fn, arg in ((f, x), (rows_sum, x[:n // 3000 * 3000].reshape(-1, 3000))):
                old = np.getbufsize()
                np.setbufsize(bufsize)
                try:
                    value, plan = _plan(fn, arg)
                    expected = fn(arg)
                finally:
                    np.setbufsize(old)
                assert same(value, expected), (fn.__name__, n, dtype)
                assert plan["groups"][0]["tier_a_runs"] == 2, plan["groups"][0]


def rows_sum(x):
    return (x * 1.0 - 0.0).sum(axis=-1)


def test_released_intermediates_are_pooled_for_later_outputs():
    """Memory planning across groups and runs: a large intermediate the run lets go of (nothing else holding
    it) is kept by the compiled graph's pool, and a later fused output of its dtype and shape takes it instead
    of a fresh allocation. Results a caller holds are never reused: the first call's results stay as they were."""
    sot.config.cpu_tier_b = False
    sot.config.cpu_block = 0
    big_a, big_b = rng.standard_normal((300, 1001)), rng.standard_normal((300, 1001))
    expected = [pooled_later(big_a + k, big_b) for k in range(4)]
    sot.reset()
    cap.clear(pooled_later)
    t = sot.translate.new_translator(records=True)
    with cap.capture(t):
        first = pooled_later(big_a, big_b)
        kept = tuple(x.copy() for x in first)
        got = [pooled_later(big_a + k, big_b) for k in range(4)]
    assert all(same(g, e) for g, e in zip(got, expected)) and same(first, kept)
    plan = [g for r in t.records() if r["transformed"] is not None for g in r["graphs"]][0]["compiled"].plan()
    assert plan["pooled_arrays"] >= 1, plan


def test_slices_move_ahead_of_their_group():
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    u = rng.standard_normal((50, 60))
    value, plan = _plan(stencil_2d, u)
    assert same(value, stencil_2d(u))
    fused = [g for g in plan["groups"] if g["kind"] == "fused"]
    # The three slices before the first add run as they are; the two between the adds move ahead of the group.
    assert [g["op_names"] for g in plan["groups"]][:3] == [["getitem"]] * 3
    assert len(fused) == 1 and len(fused[0]["hoisted"]) == 2, plan
    assert fused[0]["op_names"] == ["add", "add", "add", "multiply", "subtract", "multiply", "add"]
    assert fused[0]["tier_a_runs"] == 2 and fused[0]["op_by_op_runs"] == 0
    assert any(line.endswith("(after 2 slices moved ahead of it) - tier A 2, tier B 0, op by op 0")
               for line in sot.report.plan_lines(plan)), sot.report.plan_lines(plan)
    # A slice of a value the group makes ends the group; a negative step runs op by op (NumPy may flip it).
    value, plan = _plan(slice_of_group_value, A)
    assert same(value, slice_of_group_value(A))
    assert [g["kind"] for g in plan["groups"]][:2] == ["fused", "opaque"]
    value, plan = _plan(reversed_slices, A)
    assert same(value, reversed_slices(A))
    (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert g["op_by_op_runs"] == 2 and g["last_fallback"] == "an input whose strides are not in C order"


@pytest.mark.parametrize("block", [0, 64])
def test_tier_b_runs_rows_of_slices(block):
    sot.config.cpu_block, sot.config.cpu_tier_b = block, True
    for fn, u in ((stencil_2d, rng.standard_normal((100, 130))), (stencil_3d, rng.standard_normal((12, 20, 130)))):
        _plan(fn, u)
        sot._sot.graph.wait_for_kernels()
        value, plan = _plan(fn, u)
        (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
        assert g["tier_b"].startswith("ready") and g["tier_b_runs"] == 1, g
        assert same(value, fn(u))
        other = u[::-1].copy() * 3.0
        assert same(sot.jit(fn)(other), fn(other))


def test_powers_fuse_as_numpy_computes_them():
    """``x ** c`` joins a group as the ufunc NumPy's method calls for that exponent: power, square or sqrt."""
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    fn = lambda a: (a * 2.0) ** 3.0 + np.abs(a) ** 0.5 - a ** 2 + 1.0  # noqa: E731
    value, plan = _plan(fn, A)
    assert same(value, fn(A))
    (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
    assert g["op_names"].count("power") == 3 and g["tier_a_runs"] == 2, g
    assert "power(" in g["kernel"] and "sqrt(" in g["kernel"] and "square(" in g["kernel"], g["kernel"]


def test_in_place_ops_on_group_values_are_members():
    """``t += y`` on a value the group makes joins the group (later readers read the new value); on an input it
    ends the group (a change the caller sees)."""
    sot.config.cpu_block, sot.config.cpu_tier_b = 64, False
    value, plan = _plan(in_place_members, A, B)
    assert same(value, in_place_members(A, B))
    (g,) = plan["groups"]
    assert g["kind"] == "fused" and g["op_names"] == [
        "multiply", "add", "multiply", "multiply", "subtract", "add", "true_divide", "multiply", "subtract"], g
    assert g["tier_a_runs"] == 2 and g["op_by_op_runs"] == 0
    a = A.copy()
    value, plan = _plan(in_place_on_input, a, B)
    assert [g["kind"] for g in plan["groups"]] == ["fused", "opaque", "fused"], plan["groups"]
    assert plan["groups"][1]["why"] == "add: changes an array in place"



def nbody_like(px, py, m):
    dx = px[None, :] - px[:, None]
    dy = py[None, :] - py[:, None]
    r2 = dx * dx + dy * dy + 0.01
    inv = m[None, :] / (r2 * np.sqrt(r2))
    return (dx * inv).sum(axis=1), np.max(dy * inv - 1.0, axis=-1)


def _rows_data(shape, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype) * 4
    flat = x.reshape(-1)
    flat[::101] = np.nan
    flat[::97] = -0.0
    flat[::89] = np.inf
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("width", [128, 100])
def test_tier_b_runs_groups_ending_in_row_reductions(dtype, width):
    """A group ending in a reduction over the last axis runs tier B's code on each row (a column broadcast along the
    rows read once a row; NumPy's loops only when rows are whole SIMD vectors), then NumPy's own reduce on the rows
    as tier A: eager NumPy's bits, with NaN, inf and signed zeros; then other values and shapes."""
    sot.config.cpu_block = 0
    for fn, needs_whole_vectors in ((softmax, True), (layernorm, False), (rows_min_max, False)):
        x = _rows_data((90, width), dtype, 1)
        with np.errstate(all="ignore"):
            value, plan = _tier_b_plan(fn, x)
            reducing = [g for g in plan["groups"] if g["kind"] == "fused" and g["op_names"][-1] in ("sum", "mean",
                                                                                                     "max", "min")]
            assert reducing and same(value, fn(x)), fn.__name__
            for g in reducing:
                if needs_whole_vectors and (width % 64 or not NUMPY2):
                    assert g["tier_b_runs"] == 0, (fn.__name__, g)
                else:
                    assert g["tier_b"].startswith("ready") and g["tier_b_runs"] == 1, (fn.__name__, g)
            for shape, seed in (((70, width), 2), ((3, 45, width), 3)):
                y = _rows_data(shape, dtype, seed)
                assert same(sot.jit(fn)(y), fn(y)), (fn.__name__, shape)
    px, py, m = (np.random.default_rng(s).standard_normal(200).astype(dtype) for s in (4, 5, 6))
    with np.errstate(all="ignore"):
        value, plan = _tier_b_plan(nbody_like, px, py, m)
        assert same(value, nbody_like(px, py, m))
        g = [g for g in plan["groups"] if g["kind"] == "fused"][0]
        assert g["tier_b"].startswith("ready") and g["tier_b_runs"] == 1, g


def overflow_rows(x):
    return (x * x * 1e300).sum(axis=-1)


def test_tier_b_row_reduction_flags_as_eager():
    x = np.random.default_rng(7).standard_normal((50, 128))
    x[17, 3] = 1e10
    assert _tier_b_warnings_as_eager(overflow_rows, x)


def column_chain(a, col):
    return (a * 2.0 - col) * (a + col)


def test_tier_b_rows_shorter_than_64_run_tier_a():
    """One call a row does not pay for short rows (a (524288, 8) k-means distance matrix beside a column ran 2x
    slower so): rows of fewer than 64 elements beside a column run on tier A; long ones on tier B."""
    sot.config.cpu_block = 0
    for shape, tier_b in (((3000, 8), 0), ((100, 64), 1)):
        a = rng.standard_normal(shape)
        col = rng.standard_normal((shape[0], 1))
        value, plan = _tier_b_plan(column_chain, a, col)
        (g,) = [g for g in plan["groups"] if g["kind"] == "fused"]
        assert g["tier_b"].startswith("ready") and g["tier_b_runs"] == tier_b, (shape, g)
        assert same(value, column_chain(a, col))
