// Tier C for a graph with no loop op, where it measures faster (whole_graph.hpp).
#include "graph/backends/cpu/whole/whole_graph.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_runner.hpp"
#include "graph/exec/loop_op.hpp"

namespace sot::graph::whole {

WholeGraph::WholeGraph(Graph graph, std::vector<int> outputs)
    : graph_(std::move(graph)),
      outputs_(std::move(outputs)),
      ndarray_(loaded_module("numpy").attr("ndarray")) {}

int WholeGraph::size_class(PyObject* const* args, std::size_t nargs) const {
  auto* const ndarray = reinterpret_cast<PyTypeObject*>(ndarray_.ptr());
  long long most = 0;
  for (std::size_t k = 0; k < nargs; ++k) {
    if (PyObject_TypeCheck(args[k], ndarray) == 0) {
      continue;
    }
    const ArrayFields* f = array_fields(args[k]);
    long long n = 1;
    for (int d = 0; d < f->nd; ++d) {
      n *= f->dimensions[d];
    }
    most = std::max(most, n);
  }
  if (most > kMostItems) {
    return -1;
  }
  int size = 0;
  while (most > 0 && size < kSizes - 1) {
    most >>= 1;
    ++size;
  }
  return size;
}

void WholeGraph::make_code() {
  // (during a call of the graph: nothing may escape into the caller's C API frame)
  try {
    code_ = native_loop(graph_as_step(graph_, outputs_));
  } catch (pybind11::error_already_set& e) {
    code_ = std::make_shared<UnemittedLoop>(std::string("its emission raised: ") + e.what());
  } catch (const std::exception& e) {
    code_ = std::make_shared<UnemittedLoop>(std::string("its emission failed: ") + e.what());
  }
  if (!code_) {
    code_ = std::make_shared<UnemittedLoop>("tier C is off (SOT_CPU_TIER_C=0)");
  }
}

LoopCode::Route WholeGraph::route(PyObject* const* args, std::size_t nargs) {
  if (code_ && code_->retired()) {
    return Route::kOther;  // (not emitted, its compile failed, or it gave up too often)
  }
  const int size = size_class(args, nargs);
  if (size < 0) {
    return Route::kOther;  // (too large: tier B's fused kernels and threads pay there)
  }
  const long hot = whole_options().hot_calls.load();
  if (!code_) {
    if (++small_calls_ < std::max(hot, 1L)) {
      return Route::kOther;
    }
    make_code();
  }
  if (!code_->ready()) {
    return Route::kOther;
  }
  if (hot == 0) {
    return Route::kNative;
  }
  Size& s = sizes_[static_cast<std::size_t>(size)];
  last_ = size;
  if (s.decided) {
    if (++s.calls < s.next_round) {
      return s.native ? Route::kNative : Route::kOther;
    }
    s.decided = false;  // (a new round: tier B's kernels may be ready now)
    s.samples = 0;
    s.best_native = -1;
    s.best_other = -1;
  }
  return s.samples % 2 == 0 ? Route::kNativeTimed : Route::kOtherTimed;
}

void WholeGraph::timed(bool native, long long ns) {
  if (last_ < 0) {
    return;
  }
  Size& s = sizes_[static_cast<std::size_t>(last_)];
  long long& best = native ? s.best_native : s.best_other;
  best = best < 0 ? ns : std::min(best, ns);
  if (++s.samples < 2 * kSamples) {
    return;
  }
  s.native = s.best_native <= s.best_other;
  s.decided = true;
  s.calls = 0;
  s.next_round = s.next_round == 0 ? 256 : s.next_round * 4;
}

LoopCode::Outcome WholeGraph::run(PyObject* const* args, std::size_t nargs, PyObject** result) {
  return code_ ? code_->run(args, nargs, result) : Outcome::kGaveUp;
}

std::string WholeGraph::status() const {
  const long hot = whole_options().hot_calls.load();
  if (!code_) {
    return "waiting: made native after " + std::to_string(std::max(hot, 1L)) +
           " calls on arrays of at most " + std::to_string(kMostItems) + " items (" +
           std::to_string(small_calls_) + " so far)";
  }
  std::string s = code_->status();
  for (int k = 0; k < kSizes; ++k) {
    const Size& size = sizes_[static_cast<std::size_t>(k)];
    if (!size.decided) {
      continue;
    }
    char text[128];
    std::snprintf(
        text, sizeof text, "; arrays of up to %lld items: %s (%.2f us native, %.2f us not)",
        (1LL << k) - 1, size.native ? "native" : "not native",
        static_cast<double>(size.best_native) * 1e-3, static_cast<double>(size.best_other) * 1e-3);
    s += text;
  }
  return s;
}

std::shared_ptr<LoopCode> native_graph(const Graph& graph, const std::vector<int>& outputs) {
  // (a graph with no loop op: tier B's groups, each compiled only where it pays, run it until it
  // is hot; one with a loop op is compiled at once, as a whole in place of once per loop)
  const auto& ops = graph.ops();
  if (std::none_of(ops.begin(), ops.end(), [](const Op& op) { return op.name == "loop"; })) {
    if (!whole_options().enabled.load()) {
      return nullptr;
    }
    return std::make_shared<WholeGraph>(graph, outputs);
  }
  return native_loop(graph_as_step(graph, outputs));
}

}  // namespace sot::graph::whole
