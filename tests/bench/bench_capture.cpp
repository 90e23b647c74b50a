// The capture runtime's per-call cost for a function of three arguments (two numpy arrays, one
// int): a plain call (the baseline, capture off), the hook passing a skipped frame through, and a
// cache hit (C++ guards on both arrays' type and buffer meta and the int's type, then the
// replacement code run in the frame). The runtime is driven through the `sot` package as user code
// would; counters report the added nanoseconds per call.
#include <benchmark/benchmark.h>
#include <pybind11/embed.h>

#include <cstdio>
#include <exception>

namespace py = pybind11;

namespace {

struct Setup {
  py::dict ns;
  py::object f;  // plain and pass-through runs
  py::object g;  // cache-hit runs (same body)
  py::tuple args;
};
Setup* g_setup = nullptr;

void call_loop(benchmark::State& state, const py::object& function) {
  PyObject* fn = function.ptr();
  PyObject* args = g_setup->args.ptr();
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop idiom
    PyObject* result = PyObject_Call(fn, args, nullptr);
    if (result == nullptr) {
      state.SkipWithError("the call raised");
      PyErr_Clear();
      return;
    }
    Py_DECREF(result);
  }
}

void BM_PlainCall(benchmark::State& state) {
  call_loop(state, g_setup->f);
}

void BM_HookPassThrough(benchmark::State& state) {
  py::exec(
      "sot.capture.clear(f); sot.capture.mark_do_not_translate(f); scope = "
      "sot.capture.capture(decline); "
      "scope.__enter__()",
      g_setup->ns);
  call_loop(state, g_setup->f);
  py::exec("scope.__exit__(None, None, None)", g_setup->ns);
}

void BM_CacheHit(benchmark::State& state) {
  py::exec("scope = sot.capture.capture(translate); scope.__enter__(); g(a, b, 3)", g_setup->ns);
  call_loop(state, g_setup->g);
  py::exec("scope.__exit__(None, None, None); st = sot.capture.stats(g)", g_setup->ns);
  const py::dict st = g_setup->ns["st"];
  const double hits = st["hits"].cast<double>();
  state.counters["guard_ns_per_hit"] = hits > 0 ? st["guard_ns"].cast<double>() / hits : 0.0;
  state.counters["translations"] = st["translations"].cast<double>();
}

}  // namespace

BENCHMARK(BM_PlainCall);
BENCHMARK(BM_HookPassThrough);
BENCHMARK(BM_CacheHit);

int main(int argc, char** argv) try {
  py::scoped_interpreter python;
  Setup setup;
  py::module_::import("sys").attr("path").attr("insert")(0, SOT_BENCH_PYTHON_DIR);
  setup.ns["__builtins__"] = py::module_::import("builtins");
  py::exec(R"(
import numpy as np, sot, sot.bytecode as bc
def f(a, b, n):
    return n
def g(a, b, n):
    return n
def decline(code, local_vars):
    return None
def translate(code, local_vars):
    guards = sot.capture.Guards(code)
    guards.local("a").array_like(local_vars["a"])
    guards.local("b").array_like(local_vars["b"])
    guards.local("n").type_is(int)
    return bc.roundtrip(code), guards.tree
a = np.ones((64, 64))
b = np.ones((64, 64))
)",
           setup.ns);
  setup.f = setup.ns["f"];
  setup.g = setup.ns["g"];
  setup.args = py::make_tuple(setup.ns["a"], setup.ns["b"], 3);
  g_setup = &setup;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_setup = nullptr;
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_capture: %s\n", e.what());
  return 1;
}
