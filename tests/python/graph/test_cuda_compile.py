"""The CUDA backend's kernels where there is no GPU: the CUDA C++ emitted for fused groups compiles with NVRTC to
an sm_90 cubin without spills, each kind of kernel has its entry points (elementwise flat and strided, row
reductions, two-pass reductions over all axes), and what cannot run on the GPU as NumPy computes it is refused with
its reason. (The whole NumPy corpus goes through the same check under SOT_CUDA_CHECK=1 in `make test`.)"""

import numpy as np
import pytest
from cuda_checking import cuda_check_on, kernels_of

import sot

G = sot._sot.graph
NVRTC = G.nvrtc_version()
pytestmark = pytest.mark.skipif(not NVRTC[:1].isdigit(), reason=f"NVRTC not available: {NVRTC}")


@pytest.fixture
def check():
    # Under SOT_CUDA_CHECK=1 the check is on for the session: it stays on, and these tests read only the kernels
    # their own calls add (cuda_check_take).
    with cuda_check_on():
        yield


def chain(a, b):
    return np.sqrt(a * a + b * b) / (1.0 + np.exp(-a))


def rows_softmax(x):
    e = np.exp(x - 1.5)
    return e / e.sum(axis=-1, keepdims=True)


def row_stats(x):
    return (x * 2.0).max(axis=-1), (x + 1.0).min(axis=-1), (x * x).mean(axis=-1)


def total(x):
    return (x * x + 1.0).sum(), (x - 2.0).mean()


def ints(a, b):
    return (a * 3 + b) & 255, -a, np.maximum(a, b), a < b


def selects(a, b):
    return np.where(a > b, a, b * 2.0), np.logical_and(a > 0, b > 0), np.clip(a * 2.0, -1.0, 1.0)


def casts(a):
    return (a * 2.0).astype(np.float32) + np.float32(1), (a > 0).astype(np.int64) * 3


def broadcast(a, col):
    return a * col + col


def float_to_int(a):
    return (a * 2.0).astype(np.int32)


def assert_clean(entries):
    assert entries
    for e in entries:
        assert e["why"] == "", e["kernel"] + e["why"]
        assert e["ok"], e["log"] + e["source"]
        assert e["spill_bytes"] == 0 and 0 < e["registers"] <= 128, e["log"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_elementwise_kernels_compile_with_both_entry_points(check, dtype):
    a, b = np.linspace(-2, 2, 64, dtype=dtype), np.linspace(1, 3, 64, dtype=dtype)
    entries = kernels_of(chain, a, b)
    assert_clean(entries)
    (src,) = [e["source"] for e in entries]
    assert "k0_flat(const CudaArgs a)" in src and "k0_strided(const CudaArgs a)" in src
    assert ("float" if dtype == np.float32 else "double") in src
    # divide by zero is NumPy's "divide" flag where the divisor is 0, "overflow" otherwise
    assert "fl |= 8u" in src and "? 1u : 2u" in src


def test_row_reductions_are_one_block_per_row_without_atomics_on_values(check):
    x = np.random.default_rng(0).random((8, 100))
    for fn in (rows_softmax, row_stats):
        sot.reset()
        entries = kernels_of(fn, x)
        assert_clean(entries)
        rows = [e["source"] for e in entries if "_rows(const CudaArgs a)" in e["source"]]
        assert rows
        for s in rows:
            assert "__shared__" in s and "__syncthreads()" in s
            assert "atomicAdd" not in s  # (only the error flags are or'ed atomically)


def short_rows(x):
    return (x * 2.0).sum(axis=-1), np.sqrt((x * x).sum(axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 5, 6), (1000, 3), (4, 3000)])
def test_row_sums_of_every_length_and_rank_compile_without_spills(check, dtype, shape):
    # (float32 rows of a 3-d array or of 3 items spilled 20-24 bytes while the pairwise walk was inlined)
    assert_clean(kernels_of(short_rows, np.ones(shape, dtype)))


def test_sums_over_all_axes_take_two_passes(check):
    entries = kernels_of(total, np.random.default_rng(1).random((16, 33)))
    assert_clean(entries)
    both = [e for e in entries if "_partial(const CudaArgs a)" in e["source"] and "_total(const CudaArgs a)" in e["source"]]
    assert len(both) == 2


def test_integers_booleans_selects_casts_and_broadcasts_compile(check):
    ia, ib = np.arange(40, dtype=np.int64), np.arange(40, dtype=np.int64)[::-1].copy()
    fa, fb = np.linspace(-1, 1, 40), np.linspace(1, -1, 40)
    for fn, args in ((ints, (ia, ib)), (selects, (fa, fb)), (casts, (fa,)),
                     (broadcast, (np.ones((6, 7)), np.arange(6.0).reshape(6, 1)))):
        sot.reset()
        entries = kernels_of(fn, *args)
        assert_clean(entries)
        assert all("_strided(const CudaArgs a)" in e["source"] for e in entries)


def test_float_to_int_casts_are_refused_with_the_reason(check):
    entries = kernels_of(float_to_int, np.linspace(-3, 3, 32))
    assert entries and all("float-to-integer cast" in e["why"] for e in entries)


def test_float16_kernels_are_refused(check):
    a = np.linspace(0, 1, 32, dtype=np.float16)
    entries = kernels_of(chain, a, a)
    assert entries and all("float16" in e["why"] for e in entries)


def f32_big_constant(a):
    return a * 1e300 + 1.0


def small_int_product(a, b):
    return a * b + a


def test_what_numpy_would_warn_about_or_compute_otherwise_is_handled(check):
    # a float32 kernel cannot take 1e300 (NumPy warns converting it): refused
    with np.errstate(over="ignore"):
        entries = kernels_of(f32_big_constant, np.ones(8, np.float32))
    # (NEP 50: a float32 kernel; NumPy 1.x's value-based casting makes the result float64 instead, computed in
    # float64: refused as computed in another dtype than the array's)
    weak = not np.__version__.startswith("1.") or np._get_promotion_state() == "weak"
    wanted = "beyond float32's range" if weak else "computed in float32 and stored as float64"
    assert entries and all(wanted in e["why"] for e in entries), entries
    # uint16 products wrap in unsigned int, not in int (no signed overflow)
    u = np.arange(60000, 60008, dtype=np.uint16)
    entries = kernels_of(small_int_product, u, u)
    assert_clean(entries)
    assert "((unsigned int)e0 * (unsigned int)e1)" in entries[0]["source"]
    # a float32 mean divides in float64, as NumPy's mean does
    sot.reset()
    entries = kernels_of(lambda x: (x * 2.0).mean(axis=-1), np.ones((4, 70), np.float32))
    assert_clean(entries)
    assert "static_cast<double>(x) / static_cast<double>(length)" in entries[0]["source"]


def test_nvrtc_compiles_reports_resources_and_caches_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SOT_CACHE_DIR", str(tmp_path))
    src = 'extern "C" __global__ void k(double* a, long long n) {\n' \
          '  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n  if (i < n) a[i] = exp(a[i]);\n}\n'
    first = G.cuda_compile(src)
    assert first["ok"] and not first["from_disk"] and first["cubin_bytes"] > 0 and ".entry k(" in first["ptx"]
    assert first["registers"] > 0 and first["spill_bytes"] == 0 and "Used" in first["log"]
    second = G.cuda_compile(src)
    assert second["ok"] and second["from_disk"] and second["registers"] == first["registers"]
    assert len(list((tmp_path / "kernels" / "cuda").glob("*.cubin"))) == 1
    bad = G.cuda_compile('extern "C" __global__ void k() { undeclared(); }')
    assert not bad["ok"] and "undeclared" in bad["error"]
