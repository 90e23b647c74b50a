// The executor's core: the virtual frame's entry, the run loop, its three endings (return, graph
// break, failure) and the dispatch of each instruction to its opcode's handler (handler_table.cpp
// maps opcodes to handlers; the handlers live in handlers_<family>.cpp).
#include "translator/opcode_executor.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/localsplus.hpp"
#include "bytecode/opcode_table.hpp"
#include "translator/executor_support.hpp"

namespace py = pybind11;

namespace sot::translator {

std::string frame_introspection(PyCodeObject* co, bool allow_super) {
  static const char* const kNames[] = {"locals",       "vars",   "dir",       "eval",
                                       "exec",         "super",  "_getframe", "currentframe",
                                       "getframeinfo", "f_back", "f_locals",  "settrace"};
  for (const py::handle name : py::reinterpret_borrow<py::tuple>(co->co_names)) {
    std::string n = str_of(name);
    for (const char* frame_name : kNames) {
      if (n == frame_name && !(allow_super && n == "super")) {
        return n;
      }
    }
  }
  return {};
}

OpcodeExecutor::OpcodeExecutor(const bytecode::Bytecode& code, const FrameInputs& inputs,
                               GuardSet* guards)
    : code_(code), inputs_(inputs), guards_(guards) {
  own_shared_.shape_history = inputs.shape_history;
  own_shared_.dynamic_shapes = inputs.dynamic_shapes;
  own_shared_.backend = inputs.backend;
  const auto names = py::reinterpret_borrow<py::tuple>(inputs.code->co_localsplusnames);
  const auto n = static_cast<std::size_t>(inputs.code->co_nlocalsplus);
  locals_.resize(n);
  for (std::size_t i = 0; i < n && i < inputs.locals.size(); ++i) {
    if (!inputs.locals[i]) {
      continue;
    }
    Tracker t;
    t.kind = Tracker::Kind::kLocal;
    t.index = static_cast<int>(i);
    t.key = names[i];
    // A free variable's slot holds the closure's cell: its contents are what the frame received
    // (read by guards and generated code through the cell, LOAD_DEREF).
    t.deref = bytecode::localsplus::is_free(code.localsplus_kinds()[i]);
    const bool free = t.deref;
    locals_[i] = Variable::from_input(inputs.locals[i], std::move(t));
    if (free) {
      locals_[i] = Variable::cell(locals_[i], static_cast<int>(i), /*outside=*/true);
    }
  }
  // A free slot whose cell is empty is still the closure's cell.
  for (std::size_t i = 0; i < n; ++i) {
    if (!locals_[i] && bytecode::localsplus::is_free(code.localsplus_kinds()[i])) {
      locals_[i] = Variable::cell(nullptr, static_cast<int>(i), /*outside=*/true);
    }
  }
  changed_floats_as_inputs();
  entry_locals_ = locals_;
}

OpcodeExecutor::OpcodeExecutor(const bytecode::Bytecode& code, const FrameInputs& inputs,
                               GuardSet* guards, std::vector<VarPtr> locals, int depth,
                               Shared* shared, std::size_t simulated)
    : code_(code),
      inputs_(inputs),
      guards_(guards),
      locals_(std::move(locals)),
      depth_(depth),
      shared_(shared) {
  entry_locals_ = locals_;
  result_.simulated = simulated;
}

SimulationResult OpcodeExecutor::run() {
  const auto& instructions = code_.instructions();
  try {
    for (;;) {
      if (pc_ >= instructions.size()) {
        fail("ran past the end of the code");
      }
      if (++result_.simulated > kMaxSteps) {
        fail("more than " + std::to_string(kMaxSteps) +
             " instructions simulated (a long loop is unrolled)");
      }
      next_ = pc_ + 1;
      step(instructions[pc_]);
      pc_ = next_;
    }
  } catch (const Stop&) {
  }
  result_.entry_locals = entry_locals_;
  result_.cleared_lists = cleared_;
  if (shared_ == &own_shared_) {  // (an inlined call's effects stay with its caller)
    result_.effects = std::move(own_shared_.effects);
  }
  result_.arrays = shared_->arrays;
  return std::move(result_);
}

void OpcodeExecutor::graph_break(const std::string& reason) {
  const auto& ins = code_.instructions()[pc_];
  result_.kind = SimulationResult::Kind::kBreak;
  result_.first = in_group_ ? group_first_ : pc_;
  result_.last = pc_;
  result_.reason = reason;
  if (!declined_loop_.why.empty() && pc_ >= declined_loop_.from && pc_ < declined_loop_.to) {
    result_.reason += " (the loop here is not a loop op: " + declined_loop_.why + ")";
  }
  result_.lineno = ins.position.line;
  result_.state.locals = locals_;
  result_.state.stack = break_stack_ != nullptr ? *break_stack_ : stack_;
  throw Stop{};
}

void OpcodeExecutor::fail(const std::string& reason) {
  result_.kind = SimulationResult::Kind::kFail;
  result_.reason = reason;
  if (pc_ < code_.size()) {
    result_.lineno = code_.instructions()[pc_].position.line;
  }
  throw Stop{};
}

void OpcodeExecutor::clear_result() {
  result_.kind = SimulationResult::Kind::kFail;
  result_.value = nullptr;
  result_.reason.clear();
  result_.lineno = -1;
  result_.state = FrameState{};
}

void OpcodeExecutor::finish(VarPtr value) {
  result_.kind = SimulationResult::Kind::kReturn;
  result_.value = std::move(value);
  result_.last = pc_;
  result_.lineno = code_.instructions()[pc_].position.line;
  throw Stop{};
}

void OpcodeExecutor::jump_to(int target_id) {
  next_ = code_.index_of(target_id);
}

VarPtr OpcodeExecutor::make_result(py::object value) {
  ++result_.folded;
  if (Variable::is_constant_value(value)) {
    return Variable::constant(std::move(value));
  }
  if (PyList_CheckExact(value.ptr())) {
    std::vector<VarPtr> items;
    for (const py::handle item : value) {
      if (!Variable::is_constant_value(item)) {
        return nullptr;
      }
      items.push_back(Variable::constant(py::reinterpret_borrow<py::object>(item)));
    }
    return Variable::list(std::move(items));
  }
  return nullptr;
}

py::object OpcodeExecutor::constant_value(const VarPtr& v) {
  std::vector<const Variable*> open;
  return constant_value(v, &open);
}

py::object OpcodeExecutor::constant_value(const VarPtr& v, std::vector<const Variable*>* open) {
  // Containers holding themselves (a.append(a)) or nested past any real program have none: a copy
  // would lose the cycle, and the recursion must stay bounded.
  constexpr std::size_t kMaxNesting = 64;
  switch (v->kind()) {
    case Variable::Kind::kConst:
      guards_->value(v);
      return v->value();
    case Variable::Kind::kTuple:
    case Variable::Kind::kList: {
      if (open->size() >= kMaxNesting ||
          std::find(open->begin(), open->end(), v.get()) != open->end()) {
        return {};
      }
      open->push_back(v.get());
      py::list items;
      for (const VarPtr& item : v->items()) {
        py::object value = constant_value(item, open);
        if (!value) {
          open->pop_back();
          return {};
        }
        items.append(value);
      }
      open->pop_back();
      return v->kind() == Variable::Kind::kTuple ? py::object(py::tuple(items)) : py::object(items);
    }
    default:
      return {};
  }
}

void OpcodeExecutor::step(const bytecode::Instruction& ins) {
  const Handler h = (ins.opcode < 0 || ins.opcode > 255)
                        ? nullptr
                        : handlers()[static_cast<std::size_t>(ins.opcode)];
  // KW_NAMES, PRECALL and CALL form one call group (a break inside it runs the whole group).
  if (h != &OpcodeExecutor::op_kw_names && h != &OpcodeExecutor::op_precall &&
      h != &OpcodeExecutor::op_call) {
    in_group_ = false;
  }
  if (h == nullptr) {
    graph_break(std::string("opcode ") + bytecode::opcode_info(ins.opcode).name +
                " is not simulated");
  }
  (this->*h)(ins);
}

}  // namespace sot::translator
