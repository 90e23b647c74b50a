// Decode + assemble of a function of about 1,000 instructions (target: under 100 us), with plain
// Python's code.replace() on the same code object as the baseline in the same run.
#include <benchmark/benchmark.h>
#include <pybind11/embed.h>

#include <cstdio>
#include <exception>
#include <string>

#include "bytecode/bytecode.hpp"

namespace py = pybind11;
namespace sb = sot::bytecode;

namespace {

py::object big_code() {
  std::string source = "def big(x, items):\n    total = 0\n";
  for (int i = 0; i < 52; ++i) {
    const std::string n = std::to_string(i);
    source.append("    if x > ")
        .append(n)
        .append(":\n        total += x * ")
        .append(n)
        .append("\n");
    source.append("    for k in items:\n        total -= k\n");
  }
  source += "    return total\n";
  py::dict ns;
  ns["__builtins__"] = py::module_::import("builtins");
  py::exec(source, ns);
  return ns["big"].attr("__code__");
}

struct Fixture {
  Fixture() : code(big_code()) {
    instructions = static_cast<int>(sb::Bytecode::decode(code.ptr()).size());
  }
  py::object code;
  int instructions = 0;
};

// Created and destroyed while the interpreter runs (see main).
Fixture* g_fixture = nullptr;
Fixture& fixture() {
  return *g_fixture;
}

void BM_Decode(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop idiom
    benchmark::DoNotOptimize(sb::Bytecode::decode(f.code.ptr()));
  }
  state.counters["instructions"] = f.instructions;
}

void BM_DecodeAssemble(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop idiom
    benchmark::DoNotOptimize(sb::Bytecode::decode(f.code.ptr()).assemble());
  }
  state.counters["instructions"] = f.instructions;
}

void BM_BaselineCodeReplace(benchmark::State& state) {
  Fixture& f = fixture();
  const py::object co_code = f.code.attr("co_code");
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop idiom
    benchmark::DoNotOptimize(f.code.attr("replace")(py::arg("co_code") = co_code));
  }
}

}  // namespace

BENCHMARK(BM_Decode)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeAssemble)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BaselineCodeReplace)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) try {
  py::scoped_interpreter python;
  Fixture f;
  g_fixture = &f;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_fixture = nullptr;
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_bytecode: %s\n", e.what());
  return 1;
}
