// Generates the transformed code object from a simulation: for a frame that returns, code that
// rebuilds the returned value; for a graph break, code that rebuilds the locals and the value
// stack at the break, runs the breaking instruction for real and calls a resume function per
// successor with the stack and the live locals as arguments. The transformed code keeps the
// original's localsplus layout and prefix (MAKE_CELL, COPY_FREE_VARS, RESUME), so the capture
// runtime can run it in the frame CPython made; every generated instruction carries the user's
// source position.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "translator/guards/guards.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

// Codegen cannot produce sound code for this state: the original code must run.
class CodegenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ResumeFunction {
  pybind11::object code;  // the resume function's code object
  std::size_t index = 0;  // instruction index in the original where it resumes
  int offset = 0;         // byte offset of that instruction in the original code
  std::size_t stack = 0;  // values it takes from the stack (its first arguments; NULLs excluded)
  std::vector<int> live;  // localsplus indices of the live locals it takes next
};

// (user's code object, byte offset it resumes at) when `code` is a resume function, else None.
pybind11::object resume_info(PyObject* code);
// Records that `resume` resumes `of` (a user's code object or a resume function) at `offset`.
void register_resume(const pybind11::object& resume, const pybind11::object& of, int offset);

// A graph the generated code calls (compiled by the selected backend), for explain().
struct GraphRecord {
  pybind11::object compiled;
  std::string text;
  pybind11::dict json;
  pybind11::dict op_counts;
  std::size_t ops = 0;
  std::size_t inputs = 0;
  std::size_t outputs = 0;
};

// How captured graphs are compiled.
struct GraphOptions {
  std::string backend = "numpy";
  bool check = false;  // compare every op's result with the graph's dtype and shape (tests)
};

class CodeGen {
 public:
  // `original` is the decoded original code; `resume_cache` a dict that keeps resume functions
  // for this code object (the same break reuses the same resume function); `guards` receives the
  // guards codegen relies on.
  CodeGen(const bytecode::Bytecode& original, pybind11::dict resume_cache, GuardSet* guards);

  pybind11::object for_return(const SimulationResult& r);
  pybind11::object for_break(const SimulationResult& r);
  // For a break where a resume function cannot be used (inside a loop or a try/with block): the
  // state is rebuilt and the original's instructions continue from the break in this frame.
  pybind11::object for_continuation(const SimulationResult& r);
  const std::vector<ResumeFunction>& resumes() const { return resumes_; }
  // The graphs the last generated code calls (none, or one).
  const std::vector<GraphRecord>& graphs() const { return graphs_; }
  void set_graph_options(GraphOptions o) { graph_options_ = std::move(o); }

  // The resume function of `original` resuming at instruction `index` with a stack of
  // nulls.size() values (true: a NULL its prologue pushes; false: a value passed as an argument),
  // then the live locals `live` as arguments.
  static pybind11::object make_resume(const bytecode::Bytecode& original, std::size_t index,
                                      const std::vector<bool>& nulls, const std::vector<int>& live);

 private:
  struct Emitter;
  std::vector<bool> emit_state(Emitter& e, const SimulationResult& r, std::size_t keep);
  // A break's resume calls: what the stack keeps below the breaking instruction's inputs (its
  // NULLs left out), where the NULL a load pushes for a call goes, and the frame's live locals,
  // cells and free variables passed on.
  struct BreakSite {
    std::size_t keep = 0;
    std::vector<bool> kept_null;
    int pushed_null = -1;
    std::vector<int> live, cells, closure;
  };
  // The values the stack keeps below the breaking instruction's inputs; a CodegenError where no
  // resume function can continue the frame.
  std::size_t break_keep(const SimulationResult& r);
  // Runs the breaking instructions (the one at r.last jumping to `jump_label`): where the NULL
  // its load pushed for a call goes (-1: none).
  int emit_breaking(Emitter& e, const SimulationResult& r, int jump_label);
  void resume_arguments(Emitter& e, const SimulationResult& r, BreakSite* site);
  // Calls the resume function continuing at `index` with `after` values on the original's stack.
  void emit_resume_call(Emitter& e, const BreakSite& site, std::size_t index, int after);
  void emit_restore_handler(Emitter& e, const BreakSite& site, std::size_t values, int strip,
                            int cleanup);
  // What emit_state pushed: the lists built for the stack (-> position), the values pushed.
  struct StackState {
    std::map<const Variable*, std::size_t> on_stack;
    std::size_t pushed = 0;
  };
  // Home locals for the values the state holds more than once, and the graph prepared: the
  // scratch locals used.
  std::vector<int> homes_for_state(Emitter& e, const SimulationResult& r);
  // The locals the simulation changed, pushed then stored (those it unbound in `deleted`).
  void store_locals(Emitter& e, const SimulationResult& r, const StackState& st,
                    std::vector<std::size_t>* deleted);
  // Compiles the captured graph for the values `roots` refer to (and its in-place changes) and
  // sets `e` up to call it.
  void prepare_graph(Emitter& e, const SimulationResult& r, std::vector<VarPtr>* roots);
  // Home locals for the values built once, the graph prepared and its eager call emitted: the
  // scratch locals used.
  std::vector<int> homes_and_graph(Emitter& e, const SimulationResult& r,
                                   std::vector<VarPtr>* roots,
                                   const std::map<const Variable*, int>& preferred,
                                   const std::vector<int>& scratch);

  const bytecode::Bytecode& original_;
  pybind11::dict resume_cache_;
  GuardSet* guards_;
  std::vector<ResumeFunction> resumes_;
  std::vector<GraphRecord> graphs_;
  GraphOptions graph_options_;
};

}  // namespace sot::translator
