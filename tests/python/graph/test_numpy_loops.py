"""Loops captured as loop ops: a ``for`` over a long range or over an array's rows whose body is array code is one
``loop`` op of the graph (its body simulated once, a graph of its own run once per step), whatever the number of
steps; loops that cannot be (a list appended to, the loop variable read, a print) unroll as before. Every case is compared with plain
NumPy on the first call, from the cache and with other arguments.
PYTEST_DONT_REWRITE"""

import time

import pytest

from numpy_differential import LEGACY, case, check, isolated_check, native_loops, run_cases
from sot import capture as cap

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

rng = np.random.default_rng(7)
U = rng.standard_normal(64)
A = rng.standard_normal((16, 16)) / 4
V16 = rng.standard_normal(16)
X = rng.standard_normal((8, 8))


def heat_in_place(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def heat_rebound(u0, steps):
    u = u0.copy()
    for _ in range(steps):
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + 0.1 * lap
    return u, lap


def wave_three_levels(u0, steps):
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros_like(u0)
    for _ in range(steps):
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev
    return u


def power_iteration(a, v, iters):
    for _ in range(iters):
        v = a @ v
        v = v / np.sqrt((v * v).sum())
    return v, (v @ (a @ v))


def nested_loops(x):
    for _ in range(20):
        for _ in range(30):
            x = x * 0.99 + 0.01
        x = x - x.mean()
    return x


def _relax(u, n):
    for _ in range(n):
        u = 0.5 * (u + u[::-1])
    return u


def loop_in_helper(u):
    return _relax(u, 40) * 2


def reduction_carried(x, steps):
    s = x.sum()
    for _ in range(steps):
        s = s * 0.5 + x.max()
    return s


def loop_reads_input_global(u, steps):
    for _ in range(steps):
        u = np.maximum(u, U[: u.shape[0]] * 0.5)
    return u


def python_counter_carried(x):
    # a Python int the body counts with: carried from step to step as a value of the graph, a Python int after
    k = 0
    for _ in range(30):
        x = x + k
        k += 1
    return x, k


def list_append_unrolls(x):
    # (a list of the loop's ints: no buffer of the graph holds Python ints; loop_lists.cpp)
    out = []
    for t in range(20):
        x = x * 1.5
        out.append(t)
    return x, out


def index_in_arithmetic(x):
    for t in range(20):
        x = x + t
    return x


def index_weak_in_promotion(x):
    # t is a Python int on every step: float32 * t stays float32 (an np.int64 would make float64).
    acc = np.zeros_like(x)
    for t in range(300):
        y = x * t
        acc = acc + y / (t + 1)
    return acc, y


def index_to_python_float(x, dt):
    for t in range(1, 60):
        s = t * dt
        x = x + s * x / t
    return x


def welford_enumerate(samples):
    # enumerate(rows, start=1): the counter is a second loop variable, a Python int on every step.
    mean = np.zeros(samples.shape[1], samples.dtype)
    m2 = np.zeros(samples.shape[1], samples.dtype)
    for n, x in enumerate(samples, start=1):
        delta = x - mean
        mean += delta / n
        m2 += delta * (x - mean)
    return mean, m2 / (len(samples) - 1), n, x


def enumerate_range_counter_index(x):
    out = np.zeros((40, x.shape[0]))
    for i, t in enumerate(range(5, 85, 2)):
        out[i] = x * t - i
    return out, i, t


def enumerate_counter_escapes_unrolls(x):
    for i, row in enumerate(x):
        k = i
        x = x * 1.5
    return x, k, row


def zip_rows_rows(xs, ys):
    acc = np.zeros(xs.shape[1])
    for a, b in zip(xs, ys):
        acc = acc + a * b
    return acc, a, b


def zip_range_rows(xs):
    out = np.zeros(xs.shape[1])
    for t, row in zip(range(3, 3 + len(xs)), xs):
        out += row * t
    return out, t, row


def zip_unequal_unrolls(xs, ys):
    acc = np.zeros(xs.shape[1])
    for a, b in zip(xs, ys):
        acc = acc + a - b
    return acc, a, b


def zip_stepped_range_unrolls(xs):
    out = np.zeros(xs.shape[1])
    for row, t in zip(xs, range(0, 2 * len(xs), 2)):
        out = out + row * t
    return out, t


class _Holder:
    def __init__(self, x):
        self.x = x.copy()
        self.n = 0


def instance_array_changed_in_loop(x):
    # The instance's array changed in place on every step: the attribute store of the same array is no
    # change, so the loop is one op; the instance is built after it, holding the changed array.
    h = _Holder(x)
    for _ in range(40):
        h.x += 1
        h.x[0] = h.x[-1] * 0.5
    return h.x, h


def instance_counter_unrolls(x):
    h = _Holder(x)
    for i in range(40):
        h.n = i
        h.x = h.x * 1.01
    return h


def index_overflows_int8(x):
    # NumPy 2 raises OverflowError at t == 128 (1.x promotes to int16): never a loop op.
    for t in range(300):
        y = x * t
    return y


def rnn_over_time(xs, wx, wh):
    h = np.zeros(wh.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh)
    return h


def history_store(x, steps):
    hist = np.zeros(steps)
    for t in range(steps):
        x = x * 0.9 + 1.0
        hist[t] = x.sum()
    return x, hist


def trajectory_columns(x0, steps):
    traj = np.zeros((steps, 2))
    x = x0.copy()
    for t in range(steps):
        x = x * 0.97 + 0.1
        traj[t, 0] = x[0]
        traj[t, 1] = x.sum()
    return traj, traj[:, 1].max()


def rows_backwards(m):
    acc = np.zeros(m.shape[1])
    for i in range(m.shape[0] - 1, -1, -1):
        acc = acc * 0.5 + m[i]
    return acc


def over_rows(m):
    acc = np.zeros(m.shape[1])
    for row in m:
        acc = acc * 0.5 + row * row
    return acc, row  # (after the loop: the last row, a view of m)


def over_samples_peeled_twice(x, k):
    coeff = 2.0 * np.cos(2.0 * np.pi * k / len(x))
    s_prev = 0.0
    s_prev2 = 0.0
    for sample in x:  # (Python floats become NumPy scalars over the first two steps)
        s = sample + coeff * s_prev - s_prev2
        s_prev2 = s_prev
        s_prev = s
    return s_prev2 ** 2 + s_prev ** 2 - coeff * s_prev * s_prev2


def over_planes_changing_them(b):
    total = np.zeros(b.shape[1:])
    for plane in b:
        plane *= 2.0  # (in place on b, as plain Python's rows are views)
        total += plane
    return total, b


def over_rows_that_print(m):
    acc = np.zeros(m.shape[1])
    for row in m:
        acc = acc + row
        print(float(acc[0]) > 0)
    return acc


def index_out_of_range_unrolls(x):
    acc = np.zeros(x.shape[1])
    for i in range(x.shape[0] + 2):
        acc = acc + x[i]
    return acc


def index_escapes_unrolls(x):
    for t in range(20):
        k = t
        x = x * 2
    return x, k


def dtype_changes_unrolls(x):
    for _ in range(20):
        x = x / 2
    return x


def python_float_carried(x, steps):
    b = 0.0  # a Python float on the first step, a NumPy float64 after it
    for _ in range(steps):
        b = b - 0.1 * (x.mean() + b)
        x = x * 0.99
    return x, b


def print_in_loop(x):
    for _ in range(18):
        x = x * 2
        print(x.shape)
    return x


def empty_body_loop(x):
    for _ in range(100):
        pass
    return x * 2


CASES = [
    case(over_rows, rng.standard_normal((40, 5))),
    # (single elements alone: CPython runs the loop, or tier C's native loop op; test_python_number_loops.py)
    case(over_samples_peeled_twice, rng.standard_normal(256), 5, breaks=0 if native_loops() else 1),
    case(over_planes_changing_them, rng.standard_normal((20, 3, 2))),
    case(over_rows_that_print, rng.standard_normal((40, 3)), graphs=1, breaks=1),
    case(heat_in_place, U.copy(), 200),
    case(heat_rebound, U, 150),
    case(wave_three_levels, U, 120),
    case(power_iteration, A, V16, 50),
    case(nested_loops, X),
    case(loop_in_helper, U),
    case(reduction_carried, X, 40),
    case(loop_reads_input_global, U[:32], 60),
    case(python_counter_carried, X),
    case(python_counter_carried, np.arange(6, dtype=np.int32)),
    case(list_append_unrolls, X),
    case(index_in_arithmetic, X),
    case(dtype_changes_unrolls, X.astype(np.int64)),
    case(rnn_over_time, rng.standard_normal((40, 6)), rng.standard_normal((6, 5)) / 3, rng.standard_normal((5, 5)) / 3),
    case(history_store, V16, 50),
    case(trajectory_columns, V16, 40),
    case(rows_backwards, rng.standard_normal((30, 4))),
    case(index_out_of_range_unrolls, rng.standard_normal((20, 3)), graphs=1, breaks=1),
    case(index_escapes_unrolls, X),
    case(index_in_arithmetic, X.astype(np.float32)),
    case(index_in_arithmetic, np.arange(6, dtype=np.int8)),
    case(index_weak_in_promotion, rng.standard_normal(8).astype(np.float32)),
    case(index_weak_in_promotion, np.arange(5)),
    case(index_to_python_float, rng.standard_normal(6).astype(np.float32), 0.01),
    case(index_overflows_int8, np.arange(4, dtype=np.int8), breaks=int(not LEGACY)),  # (NEP 50 raises)
    case(welford_enumerate, rng.standard_normal((100, 3))),
    case(welford_enumerate, rng.standard_normal((50, 2)).astype(np.float32)),
    case(enumerate_range_counter_index, V16[:3]),
    case(enumerate_counter_escapes_unrolls, rng.standard_normal((20, 2))),
    case(zip_rows_rows, rng.standard_normal((40, 3)), rng.standard_normal((40, 3))),
    case(zip_range_rows, rng.standard_normal((30, 2)).astype(np.float32)),
    case(zip_unequal_unrolls, rng.standard_normal((20, 3)), rng.standard_normal((25, 3))),
    case(zip_stepped_range_unrolls, rng.standard_normal((20, 2))),
    case(instance_array_changed_in_loop, V16[:5]),
    case(instance_counter_unrolls, V16[:4]),
    case(python_float_carried, X, 30),
    case(dtype_changes_unrolls, np.arange(12).reshape(3, 4)),
    case(print_in_loop, X, graphs=1, breaks=1),  # (the rest of the frame runs as is after the break)
    case(empty_body_loop, X),
]


@run_cases(CASES)
def test_loops(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def _graph_texts(fn, *args):
    records = check(fn, *args, variants=False)
    return [g["text"] for r in records if r["transformed"] is not None for g in r["graphs"]]


@pytest.mark.parametrize("fn,args", [
    (heat_in_place, (U.copy(), 200)),
    (heat_rebound, (U, 150)),
    (wave_three_levels, (U, 120)),
    (power_iteration, (A, V16, 50)),
    (loop_in_helper, (U,)),
    (reduction_carried, (X, 40)),
    (rnn_over_time, (rng.standard_normal((40, 6)), rng.standard_normal((6, 5)), rng.standard_normal((5, 5)))),
    (history_store, (V16, 50)),
    (trajectory_columns, (V16, 40)),
    (python_float_carried, (X, 30)),
    (python_counter_carried, (X,)),  # the first step unrolled ("peeled"), the other 29 one op
    (dtype_changes_unrolls, (np.arange(12).reshape(3, 4),)),  # int64 on the first step, float64 after
    (rows_backwards, (rng.standard_normal((30, 4)),)),
    (over_rows, (rng.standard_normal((40, 5)),)),
    (over_planes_changing_them, (rng.standard_normal((20, 3, 2)),)),
    (index_in_arithmetic, (X,)),
    (index_weak_in_promotion, (rng.standard_normal(8).astype(np.float32),)),
    (index_to_python_float, (rng.standard_normal(6), 0.01)),
    (welford_enumerate, (rng.standard_normal((100, 3)),)),
    (enumerate_range_counter_index, (V16[:3],)),
    (zip_rows_rows, (rng.standard_normal((40, 3)), rng.standard_normal((40, 3)))),
    (zip_range_rows, (rng.standard_normal((30, 2)),)),
    (instance_array_changed_in_loop, (V16[:5],)),
])
def test_captured_as_one_loop_op(fn, args):
    (text,) = _graph_texts(fn, *args)
    assert text.count("= loop(") == 1, text


def test_nested_loop_ops():
    (text,) = _graph_texts(nested_loops, X)
    assert text.count("= loop(") == 2, text  # the outer op, and the inner one inside its body


@pytest.mark.parametrize("fn,args", [
    (list_append_unrolls, (X,)),
    (index_escapes_unrolls, (X,)),
    (enumerate_counter_escapes_unrolls, (rng.standard_normal((20, 2)),)),
    (zip_unequal_unrolls, (rng.standard_normal((20, 3)), rng.standard_normal((25, 3)))),
    (zip_stepped_range_unrolls, (rng.standard_normal((20, 2)),)),
    (instance_counter_unrolls, (V16[:4],)),
])
def test_not_captured_unrolls(fn, args):
    for text in _graph_texts(fn, *args):
        assert "= loop(" not in text, text


def _translate_and_count(steps):
    def run(u):
        return heat_in_place(u, steps)
    translator = sot.translate.new_translator(records=True)
    start = time.perf_counter()
    with cap.capture(translator):
        run(U.copy())
    elapsed = time.perf_counter() - start
    records = translator.records()
    graphs = [g for r in records if r["transformed"] is not None for g in r["graphs"]]
    return elapsed, graphs


def test_graph_size_does_not_depend_on_steps():
    _, short = _translate_and_count(100)
    _, long = _translate_and_count(10_000)
    assert [g["ops"] for g in short] == [g["ops"] for g in long]
    assert len(long) == 1 and "= loop(" in long[0]["text"]
