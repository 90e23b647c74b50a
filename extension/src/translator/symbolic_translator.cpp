#include "translator/symbolic_translator.hpp"

#include "bytecode/emitter.hpp"

#include <chrono>
#include <iostream>
#include <utility>

#include "bytecode/disassemble.hpp"
#include "bytecode/opcode_table.hpp"
#include "capture/code_cache.hpp"
#include "capture/guard_tree.hpp"
#include "graph/exec/backend.hpp"
#include "graph/ir/arg_values.hpp"
#include "translator/code_data.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// "f", or "f.__sot_resume_42" for a resume function of f.
std::string display_name(PyObject* code) {
  std::string name =
      py::str(reinterpret_cast<PyCodeObject*>(code)->co_qualname).cast<std::string>();
  const py::object info = resume_info(code);
  if (!info.is_none()) {
    name += ".__sot_resume_" + py::str(py::tuple(info)[1]).cast<std::string>();
  }
  return name;
}

std::string filename_of(PyCodeObject* co) {
  return py::str(co->co_filename).cast<std::string>();
}

std::string where(PyCodeObject* co, int lineno) {
  return filename_of(co) + ":" + std::to_string(lineno);
}

// Whether instruction `k` lies inside a loop (between a backward jump's target and the jump).
bool inside_loop(const bytecode::Bytecode& bc, std::size_t k) {
  for (std::size_t j = 0; j < bc.size(); ++j) {
    const bytecode::Instruction& ins = bc.at(j);
    if (ins.target < 0 || !bytecode::opcode_info(ins.opcode).is_jump()) {
      continue;
    }
    const std::size_t t = bc.index_of(ins.target);
    if (t <= j && t <= k && k <= j) {
      return true;
    }
  }
  return false;
}

// Whether the graph before a break holds ops but no array work: only element reads (x[i]) and ops
// of NumPy scalars and Python numbers (comparisons of them), no loop or cond op, nothing written.
// Run before the rest of a frame that goes on as is, such a graph costs a call and saves nothing.
bool only_scalar_work(const SimulationResult& result) {
  if (!result.arrays || result.arrays->graph.ops().empty()) {
    return false;
  }
  const graph::Graph& g = result.arrays->graph;
  auto number = [&g](int v) {
    const graph::ValueInfo& info = g.value(v).info;
    return info.scalar || info.python != 0;
  };
  for (const graph::Op& op : g.ops()) {
    if (op.name == "loop" || op.name == "cond" || op.mutates || !number(op.result)) {
      return false;
    }
    bool arrays = false;  // (a reduction of an array, a dot product: array work)
    graph::for_each_value(op, [&](int v) { arrays = arrays || !number(v); });
    if (arrays && op.name != "getitem" && op.name != "getitem_at") {
      return false;
    }
  }
  return true;
}

}  // namespace

py::list& SymbolicTranslator::seen() {
  static auto* list = new py::list();  // never freed: outlives the interpreter's teardown
  return *list;
}

capture::Translation SymbolicTranslator::translate(const capture::FrameInfo& frame) {
  if (!filter.is_none() &&
      !filter(py::handle(reinterpret_cast<PyObject*>(frame.code))).cast<bool>()) {
    return capture::Translation::declined({});  // (not recorded: not this translator's business)
  }
  TranslationRecord record;
  record.original = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(frame.code));
  const auto started = std::chrono::steady_clock::now();
  capture::Translation t;
  try {
    t = run(frame, &record);
  } catch (const CodegenError& e) {
    t = capture::Translation::failed(std::string("codegen: ") + e.what());
  } catch (const bytecode::EmitError& e) {
    t = capture::Translation::failed(std::string("codegen: ") + e.what());
  } catch (const bytecode::BytecodeError& e) {
    t = capture::Translation::failed(std::string("bytecode: ") + e.what());
  } catch (const graph::BackendError& e) {
    t = capture::Translation::failed(e.what());
  } catch (py::error_already_set& e) {
    t = capture::Translation::failed(std::string("internal error: ") + e.what());
  } catch (const std::exception& e) {
    PyErr_Clear();
    t = capture::Translation::failed(std::string("internal error: ") + e.what());
  }
  record.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  seen().append(py::weakref(record.original));
  if (t.outcome == capture::Translation::Outcome::kTranslated) {
    ++translations;
    record.transformed = t.code;
  } else if (t.outcome == capture::Translation::Outcome::kDeclined) {
    record.transformed = py::none();
    record.declined = t.reason;
  } else {
    ++failures;
    record.transformed = py::none();
    record.failure = t.reason;
  }
  breaks += record.breaks.size();
  if (t.outcome == capture::Translation::Outcome::kTranslated) {
    graphs += record.graphs.size();
  }
  if ((log & kLogBreaks) != 0) {
    for (const BreakRecord& b : record.breaks) {
      std::cerr << "sot: graph break in " << display_name(reinterpret_cast<PyObject*>(frame.code))
                << " at " << b.filename << ":" << b.lineno << ": " << b.reason << "\n";
    }
    if (!record.failure.empty()) {
      std::cerr << "sot: " << display_name(reinterpret_cast<PyObject*>(frame.code))
                << " runs as is: " << record.failure << "\n";
    }
  }
  if ((log & kLogGraphs) != 0 && t.outcome == capture::Translation::Outcome::kTranslated) {
    for (const GraphRecord& g : record.graphs) {
      std::cerr << "sot: graph of " << display_name(reinterpret_cast<PyObject*>(frame.code)) << " ("
                << g.ops << " ops):\n"
                << g.text;
    }
  }
  if ((log & kLogGuards) != 0 && !record.guards.empty()) {
    std::cerr << "sot: guards of " << display_name(reinterpret_cast<PyObject*>(frame.code))
              << ":\n";
    for (const std::string& g : record.guards) {
      std::cerr << "  " << g << "\n";
    }
  }
  if ((log & kLogBytecode) != 0 && record.transformed && !record.transformed.is_none()) {
    std::cerr << "sot: transformed " << display_name(reinterpret_cast<PyObject*>(frame.code))
              << ":\n"
              << bytecode::disassemble_text(bytecode::Bytecode::decode(record.transformed.ptr()));
    for (const ResumeFunction& r : record.resumes) {
      std::cerr << "sot: resume function " << display_name(r.code.ptr()) << ":\n"
                << bytecode::disassemble_text(bytecode::Bytecode::decode(r.code.ptr()));
    }
  }
  if (keep_records) {
    records.push_back(std::move(record));
  }
  return t;
}

capture::Translation SymbolicTranslator::run(const capture::FrameInfo& frame,
                                             TranslationRecord* record) {
  PyCodeObject* co = frame.code;
  if ((co->co_flags & CO_OPTIMIZED) == 0 || (co->co_flags & CO_NEWLOCALS) == 0) {
    return capture::Translation::declined("module or class body (not a function frame)");
  }
  // Code that looks at its own frame would see the resume functions' frames after a break.
  const std::string introspection = frame_introspection(co);
  if (!introspection.empty()) {
    return capture::Translation::declined("the function uses " + introspection +
                                          ", which looks at its own frame");
  }
  const auto code = bytecode::Bytecode::decode(reinterpret_cast<PyObject*>(co));
  record->instructions = code.size();
  // 3.12+ inline comprehensions; one whose variable is a cell makes and restores that cell in the
  // body (MAKE_CELL after RESUME), sharing the slot with an outer local of the same name.
  bool started = false;
  for (const bytecode::Instruction& ins : code.instructions()) {
    const std::string name = bytecode::opcode_info(ins.opcode).name;
    if (started && name == "MAKE_CELL") {
      return capture::Translation::declined(
          "an inlined comprehension whose variable is a cell (MAKE_CELL in the body)");
    }
    started = started || name == "RESUME";
  }

  FrameInputs inputs;
  inputs.code = co;
  inputs.globals = frame.globals;
  inputs.builtins = frame.builtins;
  const auto names = py::reinterpret_borrow<py::tuple>(co->co_localsplusnames);
  for (int i = 0; i < co->co_nlocalsplus; ++i) {
    PyObject* v = frame.values->local(i, PyTuple_GET_ITEM(co->co_localsplusnames, i));  // borrowed
    inputs.locals.push_back(v != nullptr ? py::reinterpret_borrow<py::object>(v) : py::object());
  }
  if (inputs.globals == nullptr || !PyDict_Check(inputs.globals)) {
    return capture::Translation::declined("the frame's globals are not a dict");
  }

  // A resume function's prologue ends at its first unconditional jump.
  const bool is_resume = !resume_info(reinterpret_cast<PyObject*>(co)).is_none();
  if (is_resume) {
    for (std::size_t k = 0; k < code.size(); ++k) {
      if (bytecode::opcode_info(code.at(k).opcode).is_unconditional_jump()) {
        inputs.resume_prologue_end = k;
        break;
      }
    }
  }
  capture::CodeCache* cache = capture::cache_for(reinterpret_cast<PyObject*>(co));
  if (cache == nullptr) {
    throw py::error_already_set();
  }
  // Shapes seen by earlier translations of this code (forgotten by capture.clear()).
  CodeData& data = code_data(cache);
  inputs.shape_history = data.shapes;
  inputs.dynamic_shapes = dynamic_shapes;
  inputs.backend = backend;
  GuardSet guards;
  OpcodeExecutor executor(code, inputs, &guards);
  SimulationResult result = executor.run();
  if (result.arrays) {
    add_array_guards(*result.arrays, &guards);
  }
  record->simulated = result.simulated;
  record->folded = result.folded;
  if (result.kind == SimulationResult::Kind::kFail) {
    return capture::Translation::failed(result.reason + " (" + where(co, result.lineno) + ")");
  }

  CodeGen gen(code, data.resumes, &guards);
  gen.set_graph_options(GraphOptions{backend, check_graphs});
  py::object transformed;
  if (result.kind == SimulationResult::Kind::kBreak && is_resume &&
      result.last <= inputs.resume_prologue_end) {
    // A resume function that cannot get past its own prologue would only make another like it.
    return capture::Translation::failed("the resume function's prologue could not be simulated: " +
                                        result.reason);
  }
  if (result.kind == SimulationResult::Kind::kBreak) {
    BreakRecord b;
    b.reason = result.reason;
    b.filename = filename_of(co);
    b.lineno = result.lineno;
    b.offset = code.at(result.last).original_offset;
    record->breaks.push_back(b);
    if (strict) {
      return capture::Translation::failed("graph break (" + where(co, result.lineno) +
                                          "): " + result.reason);
    }
    bool in_place = inside_loop(code, result.last);
    // (a branch on a value of the graph, not a loop left to CPython on purpose at its FOR_ITER)
    const bytecode::OpcodeInfo& breaking = bytecode::opcode_info(code.at(result.last).opcode);
    const bool branch =
        breaking.is_jump() && std::string(breaking.name).find("_IF_") != std::string::npos;
    if (in_place && branch && only_scalar_work(result)) {
      return capture::Translation::failed(
          "a graph break inside a loop with no array work before it (" + where(co, result.lineno) +
          "): " + result.reason + "; the function runs as is");
    }
    for (std::size_t k = result.first; k <= result.last; ++k) {
      in_place = in_place || code.at(k).handler.has_value();
    }
    if (!in_place) {
      try {
        transformed = gen.for_break(result);
      } catch (const CodegenError& e) {
        in_place = true;  // e.g. a call pending below an instruction of unknown arity
        record->breaks.back().reason += std::string(" (") + e.what() + ")";
      } catch (const bytecode::EmitError& e) {
        in_place = true;
        record->breaks.back().reason += std::string(" (") + e.what() + ")";
      }
    }
    if (in_place) {
      // Inside a loop or a try/with block: the rest of the frame runs as is, in this frame.
      record->breaks.back().in_place = true;
      transformed = gen.for_continuation(result);
    }
  } else {
    transformed = gen.for_return(result);
  }
  record->resumes = gen.resumes();
  record->graphs = gen.graphs();
  record->guards = guards.lines();
  py::object guard = guards.tree()->size() == 0 ? py::none() : py::cast(guards.tree());
  return capture::Translation::translated(std::move(transformed), std::move(guard));
}

}  // namespace sot::translator
