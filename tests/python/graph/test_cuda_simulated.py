"""The cuda backend on the simulated device (graph/runtime/cuda/simulated_device.hpp), where there is no GPU: device
memory is host memory, each module's CUDA C++ is compiled for the host against a shim of CUDA's built-ins, launches
run in order, and what moves is counted. Its results are NumPy's (the ops here are exact ones: + - * / sqrt, sums in
NumPy's order, max/min); its counts say what the backend moves today: each fused group copies its inputs in and its
outputs out (issue 35's residency will make these counts fall)."""

import shutil

import numpy as np
import pytest
from harness import warned

import sot
from sot import capture as cap
from sot.report import plan_lines

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def chain(a, b):
    return (a * 2.0 + b) / 3.0 - np.sqrt(np.abs(b))


def broadcast(a, row):
    return a * row + 1.0


def row_sums(a):
    return (a * a).sum(axis=1), (a + 1.0).mean(axis=1)


def total(a):
    return (a * 0.5 - 1.0).sum()


def row_max(a):
    return (a - 1.0).max(axis=1)


def floats(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


CASES = [
    (chain, lambda k: (floats(k, 300), floats(k + 1, 300))),
    (chain, lambda k: (floats(k, 40, 70), floats(k + 1, 40, 70))),
    (broadcast, lambda k: (floats(k, 30, 50), floats(k + 1, 50))),
    (row_sums, lambda k: (floats(k, 20, 1000 + 37 * k),)),
    (total, lambda k: (floats(k, 5000 + 11 * k),)),
    (row_max, lambda k: (floats(k, 9, 300),)),
]


@pytest.mark.parametrize("fn,args_of", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_results_on_the_simulated_device_are_numpys(fn, args_of):
    f = sot.jit(fn, backend="cuda")
    for k in range(3):  # (the first run of a group is the host's: it checks the kernel's dtypes)
        args = args_of(k)
        plain = fn(*args)
        got = f(*args)
        plain, got = (plain, got) if isinstance(plain, tuple) else ((plain,), (got,))
        for p, g in zip(plain, got):
            assert type(p) is type(g)
            assert np.array_equal(p, g), (k, p, g)
    counts = G.cuda_simulated_counts()
    assert counts["launches"] > 0 and counts["bad_accesses"] == 0
    assert cap.stats(fn)["hits"] >= 1


def test_each_group_moves_its_inputs_in_and_its_outputs_out():
    """One fused group of two inputs and one output, run on the device: per run its two inputs are copied in,
    its output and the flag word out, the flag word zeroed, one launch and one synchronisation; memory is the
    pool's (allocated once, kept)."""
    f = sot.jit(chain, backend="cuda")
    a, b = floats(1, 256), floats(2, 256)
    f(a, b)  # (the host's run)
    f(a, b)
    G.cuda_simulated_counts(reset=True)
    for _ in range(5):
        assert np.array_equal(f(a, b), chain(a, b))
    c = G.cuda_simulated_counts()
    assert (c["to_device"], c["to_device_bytes"]) == (10, 10 * 2048)
    assert (c["to_host"], c["to_host_bytes"]) == (10, 5 * (2048 + 4))
    assert (c["zeroed"], c["launches"], c["synchronizations"]) == (5, 5, 5)
    assert c["allocs"] == 0 and c["bad_accesses"] == 0


def test_a_floating_point_error_runs_again_on_the_host_and_warns_as_numpy():
    def divide(a, b):
        return a / b + 1.0

    f = sot.jit(divide, backend="cuda")
    a, b = floats(3, 64), floats(4, 64)
    f(a, b)
    f(a, b)
    b[5] = 0.0
    got, got_w = warned(lambda: f(a, b))
    plain, plain_w = warned(lambda: divide(a, b))
    assert np.array_equal(got, plain)
    assert got_w == plain_w != []
    assert G.cuda_simulated_counts()["launches"] >= 2


def test_the_plan_says_the_groups_ran_on_the_device():
    f = sot.jit(chain, backend="cuda")
    a, b = floats(5, 128), floats(6, 128)
    for _ in range(3):
        f(a, b)
    translator = sot.translate.new_translator(records=True, backend="cuda")
    cap.clear(chain)
    with cap.capture(translator):
        for _ in range(3):
            chain(a, b)
    groups = [g for r in translator.records() for graph in r["graphs"] for g in graph["compiled"].plan()["groups"]]
    fused = [g for g in groups if g.get("on_device") is not None]
    assert fused and all(g["on_device"] and g["cuda"] == "compiled" for g in fused), fused
    assert sum(g["device_runs"] for g in fused) == 2 and sum(g["host_runs"] for g in fused) == 1
    # what the two device runs moved for the group: two 1 KB inputs in, nothing out (the result stays on the device:
    # the run copies it out as it returns it, and reads the run's flag word once)
    assert [(g["bytes_in"], g["bytes_out"], g["launches"]) for g in fused] == [(4096, 0, 2)]
    lines = [line for graph in (g for r in translator.records() for g in r["graphs"])
             for line in plan_lines(graph["compiled"].plan(), kernels=False)]
    assert any("moved 4.0 KB in, 0 B out, 2 launches" in line for line in lines), lines


# Residency (graph/backends/cuda/residency.hpp): what a run copies each way, counted by the backend
# (cuda_transfer_counts: arrays only, not the groups' flag words).

def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def differences(x):
    y = x * 2.0 + 1.0
    return y[1:] - y[:-1]


def sorted_after_write(u):
    u[1:] = u[:-1] * 2.0
    return np.sort(u) + 1.0


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["bytes_in"], c["arrays_out"], c["bytes_out"]


@pytest.mark.parametrize("steps", [500, 37])
def test_a_heat_loop_on_a_host_array_moves_it_once_each_way(steps):
    f = sot.jit(heat, backend="cuda")
    x = floats(7, 4096)
    f(x.copy(), steps)  # (the first run of each group is the host's)
    for k in range(2):
        u, plain = x.copy(), x.copy()
        G.cuda_simulated_counts(reset=True)
        moved()
        got = f(u, steps)
        assert moved() == (1, u.nbytes, 1, u.nbytes), k
        heat(plain, steps)
        assert got is u and np.array_equal(u, plain)
        c = G.cuda_simulated_counts()
        # each step: the stencil's group and the copy into the slice, back to back; one wait and one read of the
        # run's flag word at the end, then the array
        assert (c["launches"], c["synchronizations"], c["to_host"]) == (2 * steps, 1, 2)
        assert c["bad_accesses"] == 0


def test_values_between_groups_stay_on_the_device():
    f = sot.jit(differences, backend="cuda")
    x = floats(8, 1000)
    f(x)
    moved()
    for k in range(2):
        got = f(x)
        assert np.array_equal(got, differences(x)) and type(got) is np.ndarray
        assert moved() == (1, x.nbytes, 1, x.nbytes - 8), k  # x in, the differences out; y never


def test_a_host_step_reads_what_the_device_wrote():
    f = sot.jit(sorted_after_write, backend="cuda")
    x = floats(9, 300)
    f(x.copy())
    for k in range(2):
        u, plain_u = x.copy(), x.copy()
        got = f(u)
        plain = sorted_after_write(plain_u)
        assert np.array_equal(got, plain) and np.array_equal(u, plain_u), k


def mlp(x, w1, w2):
    h = np.maximum(x @ w1 + 1.0, 0.0)
    return np.sqrt(np.abs(np.dot(h, w2))) * 2.0


def check_products_stay(fn, args_of, exact=True):
    """``fn`` translated on ``args_of(k)`` (other values each call) equals its plain run (``exact``: bit for bit;
    else within float64's rounding of another summation order), copies its inputs in and its result out and
    nothing else, and runs its two products on the device; returns the last arguments."""
    f = sot.jit(fn, backend="cuda")
    f(*args_of(0))
    for k in range(1, 3):
        args = args_of(k)
        G.cuda_simulated_counts(reset=True)
        moved()
        got = f(*args)
        plain = fn(*args)
        assert np.array_equal(got, plain) if exact else np.allclose(got, plain, rtol=1e-12, atol=1e-12), k
        assert moved() == (len(args), sum(a.nbytes for a in args), 1, plain.nbytes), k
        assert G.cuda_simulated_counts()["gemms"] == 2, k
    return f, args


def test_a_matmul_between_two_fused_groups_stays_on_the_device():
    """The products run through the device's BLAS (NumPy's matmul on the simulated device, so bit for bit), their
    operands and results device arrays: the three inputs go in, the result comes out, nothing between."""
    def args_of(k):
        rng = np.random.default_rng(3 + k)
        return rng.standard_normal((64, 32)), rng.standard_normal((32, 48)), rng.standard_normal((48, 16))

    f, (x, w1, w2) = check_products_stay(mlp, args_of)
    x32, w132, w232 = (a.astype(np.float32) for a in (x, w1, w2))
    assert np.array_equal(f(x32, w132, w232), mlp(x32, w132, w232))


def view_then_device_write(a, w):
    y = a * 2.0
    h = y.T  # (a host step: y's host form, a view of it kept)
    y[0:2] = w * 3.0  # (on the device; y is not read after)
    return h


def in_place_then_view_write(a, b, w):
    y = a * 2.0
    v = y[0:2]
    y += b  # (an in-place op on the host: the frame's y is its host form)
    v[...] = w * 3.0
    return y * 1.0


@pytest.mark.parametrize("fn,shapes", [(view_then_device_write, [(4, 5), (2, 5)]),
                                       (in_place_then_view_write, [(4, 5), (4, 5), (2, 5)])])
def test_host_views_see_device_writes(fn, shapes):
    """A host view of a value the device then writes shows the write, also once the value is dead; a kernel reading
    the host form of a device value reads the value."""
    f = sot.jit(fn, backend="cuda")
    for k in range(3):
        args = [floats(20 + k + i, *s) for i, s in enumerate(shapes)]
        got, plain = f(*args), fn(*args)
        assert type(got) is type(plain) and np.array_equal(got, plain), (k, got, plain)


def product_plus(a, b):
    return (a * 1.0) @ b + 1.0


def test_a_product_that_is_not_finite_runs_on_the_host_and_warns_as_numpy():
    f = sot.jit(product_plus, backend="cuda")
    a, b = floats(30, 3, 4), floats(31, 4, 2)
    f(a, b)
    f(a, b)
    before = G.cuda_simulated_counts()["gemms"]
    big = np.full((3, 4), 1e200)
    for args in [(big, b), (a, b)]:
        got, got_w = warned(lambda: f(*args))
        plain, plain_w = warned(lambda: product_plus(*args))
        assert np.array_equal(got, plain, equal_nan=True)
        assert got_w == plain_w
    assert G.cuda_simulated_counts()["gemms"] == before + 2


def relax_divided(u, w, steps):
    for _ in range(steps):
        u[1:-1] = (u[:-2] + u[2:]) / w[1:-1]
    return u


@pytest.mark.parametrize("steps", [30, 100])
def test_an_error_flagged_mid_loop_runs_the_whole_call_again_on_the_host(steps):
    """The loop's kernels run with the run's flag word, unread until the end; a division by zero at some step makes
    the call run again on the host from the caller's untouched arrays: NumPy's warnings, each once, and the input
    changed once. At 100 steps, 97 of them are replayed (step_replay.hpp) when the error is found."""
    f = sot.jit(relax_divided, backend="cuda")
    u0, w = floats(40, 200), np.abs(floats(41, 200)) + 1.0
    f(u0.copy(), w, steps)
    f(u0.copy(), w, steps)
    w0 = w.copy()
    w0[77] = 0.0
    for k in range(2):
        u, plain_u = u0.copy(), u0.copy()
        G.cuda_simulated_counts(reset=True)
        got, got_w = warned(lambda: f(u, w0, steps))
        _, plain_w = warned(lambda: relax_divided(plain_u, w0, steps))
        assert got is u and np.array_equal(u, plain_u, equal_nan=True), k
        assert got_w == plain_w != [], k
        assert G.cuda_simulated_counts()["launches"] == 2 * steps  # (the device's try, then the host's run)
    with np.errstate(divide="raise"):
        u = u0.copy()
        with pytest.raises(FloatingPointError):
            f(u, w0, steps)
        plain_u = u0.copy()
        with pytest.raises(FloatingPointError):
            relax_divided(plain_u, w0, steps)
        assert np.array_equal(u, plain_u, equal_nan=True)


def attention_like(q, k, v):
    s = (q @ k.T) * 0.5
    w = s / (np.abs(s).sum(axis=1, keepdims=True) + 1.0)
    return w @ v


def test_a_transposed_operand_is_a_view_on_the_device():
    """`k.T` of a device array is a view there and the product reads it transposed: attention's three inputs go in,
    its result comes out."""
    check_products_stay(attention_like, lambda k: tuple(np.random.default_rng(5 + k).standard_normal((3, 24, 16))))


def write_then_read_other(a, b):
    a[:] = a * 2.0
    return b + 1.0


@pytest.mark.parametrize("split", ["view_second", "view_first", "halves"])
def test_inputs_sharing_memory_stay_coherent(split):
    """Inputs that are views of one array are mirrored each, unless their memory overlaps one already mirrored (that
    one is copied in for each use, after the device's writes are copied out)."""
    f = sot.jit(write_then_read_other, backend="cuda")
    for k in range(3):
        base, plain_base = floats(50 + k, 64), None
        plain_base = base.copy()
        pick = {"view_second": lambda x: (x, x[1:]), "view_first": lambda x: (x[1:], x),
                "halves": lambda x: (x[:32], x[32:])}[split]
        got = f(*pick(base))
        plain = write_then_read_other(*pick(plain_base))
        assert np.array_equal(got, plain) and np.array_equal(base, plain_base), (k, split)


def test_profiled_groups_give_their_device_time():
    """Under SOT_PROFILE (cuda_profile) each group's launches are timed between device marks, read once the device
    has synchronised (the simulated device's marks are the host's clock: its launches run when queued)."""
    before = G.cuda_profile(True)
    try:
        translator = sot.translate.new_translator(records=True, backend="cuda")
        cap.clear(differences)
        x = floats(60, 2048)
        with cap.capture(translator):
            for _ in range(3):
                differences(x)
    finally:
        G.cuda_profile(before)
    plans = [g["compiled"].plan() for r in translator.records() for g in r["graphs"]]
    timed = [grp["device_seconds"] for plan in plans for grp in plan["groups"] if "device_seconds" in grp]
    assert timed and sum(timed) > 0, plans
    lines = [line for plan in plans for line in plan_lines(plan, kernels=False)]
    assert any(" ms" in line and "device " in line for line in lines), lines


def attention_einsum(q, k, v):
    s = np.einsum("ij,kj->ik", q, k) * 0.25
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return np.einsum("ij,jk", p / p.sum(axis=1, keepdims=True), v)


def transposed_einsum(a, b, c):
    return np.einsum("ji,jk->ki", np.tanh(a), b) + c


def test_einsums_that_are_products_run_on_the_device():
    """An einsum of two matrices summed over one shared letter is a product (of the operands or their
    transposes, in either order): it runs through the device's BLAS, its operands and result staying there."""
    check_products_stay(attention_einsum, lambda k: tuple(np.random.default_rng(9 + k).standard_normal((3, 20, 12))),
                        exact=False)

    def args_of(k):
        rng = np.random.default_rng(11 + k)
        return rng.standard_normal((16, 8)), rng.standard_normal((16, 24)), rng.standard_normal((24, 8))

    f = sot.jit(transposed_einsum, backend="cuda")
    for k in range(3):
        args = args_of(k)
        G.cuda_simulated_counts(reset=True)
        got = f(*args)
        assert np.allclose(got, transposed_einsum(*args), rtol=1e-12, atol=1e-12)
        if k:
            assert G.cuda_simulated_counts()["gemms"] == 1, k
    # other einsums (a trace, an elementwise product, three operands) run on the host, as NumPy's
    for spec, shapes in (("ii,ij->j", [(5, 5), (5, 3)]), ("ij,ij->ij", [(4, 3), (4, 3)]),
                         ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)])):
        def other(*xs, spec=spec):
            return np.einsum(spec, *[x * 1.0 for x in xs])

        g = sot.jit(other, backend="cuda")
        for k in range(2):
            xs = [np.random.default_rng(k).standard_normal(s) for s in shapes]
            assert np.allclose(g(*xs), other(*xs), rtol=1e-12, atol=1e-12), spec



def test_the_plan_says_where_each_value_lived_in_the_last_run():
    """plan()["lived"]: the graph's values the last run held on the device and on the host (the values inside a
    fused kernel never exist as arrays); the report prints them as ranges."""
    f = sot.explain(sot.jit(mlp, backend="cuda"), floats(1, 64, 32), floats(2, 32, 16),
                    floats(3, 16, 8)).graphs[0]["compiled"]
    args = floats(4, 64, 32), floats(5, 32, 16), floats(6, 16, 8)
    first = f.plan()["lived"]
    assert first["host"], first  # (the first run of each group is the host's: its results are host arrays)
    got = f(*args)
    assert np.allclose(got, mlp(*args), rtol=1e-12, atol=1e-12)
    lived = f.plan()["lived"]
    # x, w1, w2 (mirrored), the two products, the first group's result (the maximum) and the second's: all on the
    # device, nothing on the host (%4 and %7-%8 live only inside the kernels)
    assert lived == {"device": [0, 1, 2, 3, 5, 6, 9], "host": []}, lived
    assert "values in the last run: on the device %0-%3, %5-%6, %9" in plan_lines(f.plan(), kernels=False)


def host_writes_elsewhere(a, n):
    r = np.zeros((n, n))  # (a host array: no device value to make it from)
    q = np.zeros_like(a)
    for j in range(n):
        q[:, j] = a[:, j] * 2.0
        r[j, j] = q[:, j] @ a[:, j]  # (a host step: an element of the host's r)
    return q, r


def host_writes_through_an_alias(a, idx):
    y = a * 2.0
    a[idx] = 7.0  # (fancy indexing: a host step writing the caller's array)
    return y, a * 3.0


def test_a_host_step_writing_one_array_leaves_the_others_current_on_the_device():
    # before, every host step that wrote an array made every array mirrored from the host stale on the device:
    # gram_schmidt of the corpus copied its matrix in 46 times a call, once per element of r set
    f = sot.jit(host_writes_elsewhere, backend="cuda")
    f(floats(60, 20, 6), 6)
    for k in range(2):
        a = floats(61 + k, 20, 6)
        moved()
        got, plain = f(a, 6), host_writes_elsewhere(a, 6)
        assert all(np.array_equal(g, p) for g, p in zip(got, plain)), k
        assert moved()[0] == 1, k


@pytest.mark.parametrize("view", [False, True])
def test_a_host_step_writing_an_array_the_device_mirrors_makes_it_read_again(view):
    f = sot.jit(host_writes_through_an_alias, backend="cuda")
    idx = np.array([1, 3, 4])
    args_of = (lambda b: b[::2]) if view else (lambda b: b)
    f(args_of(floats(70, 12)), idx)
    for k in range(2):
        x = floats(71 + k, 12)
        mine, theirs = (x.copy(), x.copy())
        moved()
        got, plain = f(args_of(mine), idx), host_writes_through_an_alias(args_of(theirs), idx)
        assert all(np.array_equal(g, p) for g, p in zip(got, plain)) and np.array_equal(mine, theirs), k
        assert moved()[0] == 2, k  # (a in, then again after the host wrote it)
