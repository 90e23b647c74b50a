"""The CUDA backend's row sums, run where there is no GPU: the CUDA C++ the emitter writes for a sum or mean over the
last axis is compiled by the system C++ compiler against a small host shim (a CUDA thread as a std::thread, a block's
threads meeting at a std::barrier for __syncthreads, blocks one after another) and run on rows of every length the
kernel's two ways take (a row a thread up to 128 elements, a row a block past it, NumPy's pairwise recursion split
over the block's 256 threads), with one block and with several, at NumPy's buffer size and at 4096. Each row's
result must be eager NumPy's bit for bit: the kernel adds in the running NumPy's order (0 plus the row's pairwise sum;
NumPy < 2.3: plus each part of the buffer size's, in order), so a program whose row sums cancel
(sqrt(|p|^2 + |q|^2 - 2 p.q)) gets NumPy's result on the GPU too."""

import contextlib
import hashlib
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest
from cuda_checking import cuda_check_on, kernels_of

import sot

G = sot._sot.graph
NVRTC = G.nvrtc_version()
CXX = shutil.which("c++") or shutil.which("g++")
# (the kernels come from the cpu backend's groups whatever SOT_BACKEND says: the suites' runs on other backends would
# run the same programs again)
pytestmark = [pytest.mark.skipif(not NVRTC[:1].isdigit(), reason=f"NVRTC not available: {NVRTC}"),
              pytest.mark.skipif(CXX is None, reason="no C++ compiler"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the cpu backend's run")]

SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
using std::isfinite;
using std::isinf;
using std::isnan;
struct Dim3 { unsigned x = 0; };
thread_local Dim3 threadIdx, blockIdx;
Dim3 gridDim, blockDim;
std::barrier<>* sot_barrier = nullptr;
void __syncthreads() { sot_barrier->arrive_and_wait(); }
unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, sizeof d); return d; }
int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
"""

LAUNCH = r"""
template <typename Kernel>
void launch(const CudaArgs& a, unsigned blocks, Kernel kernel) {
  gridDim.x = blocks;
  blockDim.x = 256;
  for (unsigned g = 0; g < blocks; ++g) {
    std::barrier<> bar(256);
    sot_barrier = &bar;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 256; ++t) {
      threads.emplace_back([&a, g, t, kernel] { blockIdx.x = g; threadIdx.x = t; kernel(a); });
    }
    for (std::thread& t : threads) t.join();
  }
}
"""

MAIN = r"""
// argv: rows, length, blocks, input file, output file. Buffer 0 the (rows, length) input, buffer 1 the results (a
// row's each, or the total: then the first pass runs on `blocks` blocks, the second on one).
int main(int argc, char** argv) {
  (void)argc;
  const long long rows = atoll(argv[1]), length = atoll(argv[2]);
  const unsigned blocks = static_cast<unsigned>(atoi(argv[3]));
  std::vector<T> x(static_cast<size_t>(rows * length)), out(static_cast<size_t>(rows));
  FILE* f = fopen(argv[4], "rb");
  if (fread(x.data(), sizeof(T), x.size(), f) != x.size()) return 2;
  fclose(f);
  CudaArgs a{};
  a.b[0] = reinterpret_cast<char*>(x.data());
  a.b[1] = reinterpret_cast<char*>(out.data());
  a.st[0][0] = length;
  a.st[0][1] = 1;
  a.st[1][0] = 1;
  a.st[1][1] = 0;
  a.size[0] = rows;
  a.size[1] = length;
  a.n = rows * length;
  a.rows = rows;
  unsigned flags = 0;
  a.flags = &flags;
#ifdef TOTAL
  std::vector<T> partial(blocks);
  a.partial = partial.data();
  a.st[1][0] = 0;
  a.rows = blocks;
  launch(a, blocks, KERNEL_PARTIAL);
  launch(a, 1, KERNEL_TOTAL);
#else
  launch(a, blocks, KERNEL_ROWS);
#endif
  f = fopen(argv[5], "wb");
#ifdef TOTAL
  fwrite(out.data(), sizeof(T), 1, f);
#else
  fwrite(out.data(), sizeof(T), out.size(), f);
#endif
  fclose(f);
  printf("%u\n", flags);
  return 0;
}
"""


def square_sum(x):
    return (x * x).sum(axis=-1)


def square_mean(x):
    return (x * x).mean(axis=-1)


@contextlib.contextmanager
def bufsize(size):
    """NumPy's buffer size set to `size` (None: as it is): NumPy < 2.3 sums a row in parts of that size."""
    old = np.getbufsize()
    if size is not None:
        np.setbufsize(size)
    try:
        yield
    finally:
        np.setbufsize(old)


def square_total(x):
    return (x * x).sum()


def square_total_mean(x):
    return (x * x).mean()


TOTALS = (square_total, square_total_mean)


def kernel_source(fn, dtype):
    """The CUDA C++ of fn's reduction kernel (the cpu backend's group, through the CUDA compile check)."""
    with cuda_check_on():
        entries = kernels_of(fn, np.ones((4, 16), dtype=dtype))
    (source,) = [e["source"] for e in entries if "_rows(const CudaArgs a)" in e["source"] or
                  "_total(const CudaArgs a)" in e["source"]]
    return source


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """fn, dtype, buffer size -> (the folder of the host program running fn's kernel, NumPy's parts or None)."""
    made = {}
    cached = os.environ.get("SOT_CACHE_DIR")
    cache_root = (pathlib.Path(cached) / "host_run") if cached else tmp_path_factory.mktemp("host_run")

    def build(fn, dtype, size):
        key = (fn.__name__, np.dtype(dtype).name, size)
        if key not in made:
            with bufsize(size):
                src = kernel_source(fn, dtype)
            total = fn in TOTALS
            # the layout MAIN fills: the input is buffer 0, the results buffer 1
            assert "(a.b[0])[" in src and ("*>(a.b[1])[0] = x;" if total else "*>(a.b[1])[base[1]] = x;") in src, src
            entry = re.search(r"(\w+)_(rows|total)\(const CudaArgs a\)", src).group(1)
            ctype = "double" if np.dtype(dtype) == np.float64 else "float"
            defines = (f"using T = {ctype};\n#define KERNEL_ROWS {entry}_rows\n#define KERNEL_PARTIAL {entry}_partial\n"
                       f"#define KERNEL_TOTAL {entry}_total\n" + ("#define TOTAL\n" if total else ""))
            program = SHIM + src + LAUNCH + defines + MAIN
            # (the programs are kept under SOT_CACHE_DIR by their text: the suites' other runs in `make test` reuse them)
            d = cache_root / hashlib.sha1(program.encode()).hexdigest()[:20]
            if not (d / "k").exists():
                d.mkdir(parents=True, exist_ok=True)
                (d / "k.cpp").write_text(program)
                done = subprocess.run([CXX, "-std=c++20", "-O1", "-w", "-pthread", "-o", str(d / "k.tmp"),
                                       str(d / "k.cpp")], capture_output=True, text=True, check=False)
                assert done.returncode == 0, done.stderr[-3000:]
                os.replace(d / "k.tmp", d / "k")
            # the blocks the first pass over all axes may run on: NumPy's parts (NumPy < 2.3), else any power of 2
            chunk = re.search(r"if \((\d+) > 0\) \{  // NumPy's parts", src)
            made[key] = (d, int(chunk.group(1)) if chunk else None)
        return made[key]

    return build


# Lengths on both sides of each way's limits: under 8 (a running sum), 8 to 128 (eight partial sums), past 128 (the
# recursion, split over the block), past 128 * 256 (a thread's subtree itself split) and odd lengths.
SHAPES = [(5, 0), (5, 1), (5, 3), (4, 7), (4, 8), (3, 9), (3, 100), (3, 127), (3, 128), (3, 129), (2, 300), (2, 1000),
          (2, 4097), (1, 32768), (1, 32769), (1, 123457), (600, 5)]


def blocks_of(fn, rows, length, chunk):
    if fn not in TOTALS:
        return sorted({1, min(rows, 3)})
    if chunk:
        return [max(1, -(-rows * length // chunk))]
    return [1, 4]


@pytest.mark.parametrize("fn", [square_sum, square_mean, square_total, square_total_mean])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("size", [None, 4096])
def test_sums_are_numpys_bit_for_bit(built, tmp_path, fn, dtype, size):
    d, chunk = built(fn, dtype, size)
    if size is not None and not chunk and built(fn, dtype, None)[0] == d:
        pytest.skip("NumPy >= 2.3 adds in one order at any buffer size: the program of the default size, run there")
    rng = np.random.default_rng(20261128)
    uint = np.uint64 if np.dtype(dtype) == np.float64 else np.uint32
    for rows, length in SHAPES:
        if length == 0 and fn in (square_mean, square_total_mean):
            continue  # (NumPy warns: the mean of an empty slice)
        # magnitudes over twelve orders and both signs: another order of additions gives other bits
        x = (rng.standard_normal((rows, length)) * 10.0 ** rng.uniform(-3, 3, (rows, length))).astype(dtype)
        x.tofile(tmp_path / "x.bin")
        with bufsize(size):
            want = fn(x)
        for blocks in blocks_of(fn, rows, length, chunk):
            run = subprocess.run([str(d / "k"), str(rows), str(length), str(blocks), str(tmp_path / "x.bin"),
                                  str(tmp_path / "out.bin")], capture_output=True, text=True, check=False)
            assert run.returncode == 0, run.stderr
            got = np.fromfile(tmp_path / "out.bin", dtype=dtype)
            if fn in TOTALS:
                got = got[0]
            assert np.array_equal(got.view(uint), np.asarray(want).view(uint)), (rows, length, blocks, got - want)


def test_the_order_matters_on_these_rows():
    """The comparison above can fail: the same rows added in another order (a sequential sum) give other bits."""
    rng = np.random.default_rng(20261128)
    x = rng.standard_normal((2, 4097)) * 10.0 ** rng.uniform(-3, 3, (2, 4097))
    sq = x * x
    sequential = np.array([sum(row.tolist(), 0.0) for row in sq])
    assert not np.array_equal(sequential, sq.sum(axis=-1))
