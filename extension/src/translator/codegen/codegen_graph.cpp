// The captured graph in generated code: compiled by the selected backend for the values the
// rebuilt state refers to, called once (or where its one output is loaded), its outputs copied
// from its result on the stack.
#include "translator/codegen/codegen_emitter.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "capture/code_cache.hpp"
#include "core/loaded_module.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/loop_op.hpp"
#include "graph/exec/native_graph.hpp"
#include "translator/codegen/codegen_emitter.hpp"

namespace py = pybind11;

namespace sot::translator {

using bytecode::Instruction;

void CodeGen::Emitter::emit_graph_call() {
  call_constant(
      graph_fn,
      [&] {
        for (const VarPtr& in : graph_inputs) {
          load(in);
        }
      },
      static_cast<int>(graph_inputs.size()));
  graph_done = true;
}

void CodeGen::Emitter::emit_graph_prologue() {
  if (graph_fn.is_none() || graph_lazy) {
    return;
  }
  emit_graph_call();
  if (graph_outputs.empty()) {
    emit("POP_TOP");  // in-place changes only
    return;
  }
  result_on_stack = true;
  above = 0;
  depth_known = true;
}

// Output `v` copied from the graph's result at the bottom of the stack.
void CodeGen::Emitter::load_graph_output(const Variable* v) {
  if (!depth_known) {
    throw CodegenError("a graph output loaded after a jump");
  }
  const auto it = std::find(graph_outputs.begin(), graph_outputs.end(), v);
  if (it == graph_outputs.end()) {
    throw CodegenError("a NumPy value the graph does not output");
  }
  emit("COPY", above + 1);
  if (graph_outputs.size() > 1) {
    load_const(py::int_(it - graph_outputs.begin()));
    emit("BINARY_SUBSCR");
  }
}

// Drops the graph's result from below the `above` values above it.
void CodeGen::Emitter::remove_graph_result() {
  if (!result_on_stack) {
    return;
  }
  if (!depth_known) {
    throw CodegenError("the graph's result cannot be removed after a jump");
  }
  for (int k = 2; k <= above + 1; ++k) {
    emit("SWAP", k);
  }
  emit("POP_TOP");
  result_on_stack = false;
}

std::vector<int> CodeGen::homes_and_graph(Emitter& e, const SimulationResult& r,
                                          std::vector<VarPtr>* roots,
                                          const std::map<const Variable*, int>& preferred,
                                          const std::vector<int>& scratch) {
  prepare_graph(e, r, roots);
  std::vector<int> used = e.assign_homes(*roots, preferred, scratch);
  e.emit_graph_prologue();
  return used;
}

void CodeGen::prepare_graph(Emitter& e, const SimulationResult& r, std::vector<VarPtr>* roots) {
  graphs_.clear();
  if (!r.arrays || r.arrays->graph.ops().empty()) {
    return;
  }
  // The arrays the generated code needs: the graph's outputs, in first-reference order.
  Emitter::Refs refs;
  for (const VarPtr& v : *roots) {
    Emitter::count_refs(v, &refs);
  }
  std::vector<const Variable*> outputs;
  std::vector<int> ids;
  for (const Variable* v : refs.order) {
    if (v->kind() == Variable::Kind::kArray) {
      outputs.push_back(v);
      ids.push_back(v->graph_id());
    }
  }
  if (outputs.empty() && !r.arrays->graph.runs_for_effect()) {
    return;  // nothing needs the graph and it has no effect: it does not run
  }
  graph::Backend* backend = graph::find_backend(graph_options_.backend);
  if (backend == nullptr) {
    throw CodegenError("no graph backend called '" + graph_options_.backend + "'");
  }
  // The graph as the translation left it: symbols specialized on the way are static sizes.
  graph::Graph captured = r.arrays->graph;
  for (std::size_t i = 0; i < captured.values().size(); ++i) {
    captured.info(static_cast<int>(i)) = r.arrays->current(captured.values()[i].info);
  }
  auto compile = [&](std::vector<int> outs) {
    const graph::Graph g = captured.optimized(&outs);
    // (the loops of the optimized graph: its dead loop_output ops are gone, and a loop's outputs
    // that nothing reads need not be made)
    // (their native code waits: the graph may be native as a whole, its loops with it)
    graph::compile_loops(
        g, backend, graph_options_.check,
        [&](graph::ValueInfo info) { return r.arrays->current(std::move(info)); }, false);
    std::shared_ptr<graph::LoopCode> whole = backend->compile_graph(g, outs);
    std::function<void()> native_loops = [g, backend] { graph::compile_native_loops(g, backend); };
    if (!whole || !whole->emitted()) {
      native_loops();
    }
    GraphRecord record;
    record.compiled = backend->compile(g, outs, graph_options_.check);
    if (whole) {  // (not emitted: its plan says why, and the loops have their code already)
      record.compiled = graph::native_first(record.compiled, whole, outs.size(),
                                            whole->emitted() ? std::move(native_loops) : nullptr);
    }
    record.text = g.text(outs);
    record.json = g.json(outs);
    record.op_counts = g.op_counts();
    record.ops = g.ops().size();
    record.inputs = g.inputs().size();
    record.outputs = outs.size();
    graphs_.push_back(record);
    return record.compiled;
  };
  e.graph_inputs = r.arrays->inputs;
  e.graph_fn = compile(ids);
  e.graph_outputs = outputs;
  e.graph_lazy = outputs.size() == 1 && refs.count[outputs[0]] == 1;
}

}  // namespace sot::translator
