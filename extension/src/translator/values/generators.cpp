// Generators consumed at once: `sum(x * w for x, w in zip(xs, ws))`, `max(len(a) for a in arrays)`,
// `list(f(x) for x in xs)`. Where the generator a call makes goes straight into the next call,
// and that call is a builtin that takes every item before it returns (sum, list, tuple, sorted,
// max, min, set, frozenset), running the generator to its end first gives that builtin the same
// items in the same order: the generator's body is simulated inline, each yield gathered, and the
// builtin is handed a list of them. Anything else that happens to a generator (a for loop whose
// body runs between the items, any(), next(), keeping it) still breaks the graph at the call that
// makes it.
#include <string>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "bytecode/operands.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

bool is_op(const bytecode::Instruction& ins, const char* name) {
  return ins.opcode == bytecode::opcode_by_name(name);
}

// The builtins that take every item of their one argument before they return.
constexpr const char* kConsumers[] = {"sum", "list", "tuple", "sorted",
                                      "max", "min",  "set",   "frozenset"};

bool generator_code(PyObject* code) {
  if (code == nullptr || !PyCode_Check(code)) {
    return false;
  }
  const int flags = reinterpret_cast<PyCodeObject*>(code)->co_flags;
  return (flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) == CO_GENERATOR;
}

}  // namespace

bool OpcodeExecutor::under_handler(const bytecode::Instruction& ins) const {
  if (!ins.handler.has_value()) {
    return false;
  }
  const auto& code = code_.instructions();
  const std::size_t at = code_.index_of(ins.handler->target);
  if (at >= code.size()) {
    return true;
  }
  // 3.12+: a generator's body is covered by a handler that turns a StopIteration escaping it into
  // RuntimeError; no NumPy operation raises StopIteration.
  constexpr int kStopIterationError = 3;  // INTRINSIC_STOPITERATION_ERROR
  if (collect_yields_ && is_op(code[at], "CALL_INTRINSIC_1") &&
      code[at].arg == kStopIterationError) {
    return false;
  }
  // 3.12+: an inlined comprehension (PEP 709) is covered by a handler that puts its variable's
  // outer value back and raises again (SWAP, POP_TOP, STORE_FAST, RERAISE); where no handler
  // covers that, the error leaves the frame as it would have.
  for (std::size_t k = at; k < code.size(); ++k) {
    const bytecode::Instruction& h = code[k];
    if (is_op(h, "RERAISE")) {
      return h.handler.has_value();
    }
    if (!is_op(h, "SWAP") && !is_op(h, "POP_TOP") && !is_op(h, "STORE_FAST")) {
      return true;
    }
  }
  return true;
}

void OpcodeExecutor::op_return_generator(const bytecode::Instruction& /*ins*/) {
  if (!collect_yields_) {
    graph_break("a generator function's own code");
  }
  push(Variable::constant(py::none()));  // (what the first next() sends in: popped next)
}

void OpcodeExecutor::op_yield_value(const bytecode::Instruction& /*ins*/) {
  if (!collect_yields_) {
    graph_break("a yield outside a generator consumed at once");
  }
  yielded_.push_back(pop());
  push(Variable::constant(py::none()));  // (what next() sends in)
}

bool OpcodeExecutor::consumed_by_next_call(const CallSite& site) {
  // The next instructions: [PRECALL 1] CALL 1 (no keywords).
  std::size_t j = next_;
  const auto& ins = code_.instructions();
  if (j < ins.size() && is_op(ins[j], "PRECALL")) {
    ++j;
  }
  if (j >= ins.size() || !is_op(ins[j], "CALL") || ins[j].arg != 1 ||
      stack_.size() < site.nargs + 2 + site.extra + 2) {
    return false;
  }
  // Below this call's values: that call's callable and its NULL.
  const VarPtr& lower = peek(site.nargs + site.extra + 4);
  const VarPtr& upper = peek(site.nargs + site.extra + 3);
  const bool null_below = bytecode::operand::call_null_below_callable();
  const VarPtr& consumer = null_below ? upper : lower;
  const VarPtr& null = null_below ? lower : upper;
  if (null->kind() != Variable::Kind::kNull || consumer->kind() != Variable::Kind::kObject ||
      inputs_.builtins == nullptr || !PyDict_Check(inputs_.builtins)) {
    return false;
  }
  for (const char* name : kConsumers) {
    if (PyDict_GetItemString(inputs_.builtins, name) == consumer->value().ptr()) {  // borrowed
      guards_->identity(consumer);
      return true;
    }
  }
  return false;
}

VarPtr OpcodeExecutor::generator_consumed_at_once(const CallSite& site) {
  const VarPtr& callable = site.callable;
  PyObject* code = nullptr;
  if (callable->kind() == Variable::Kind::kFunction) {
    code = callable->value().ptr();
  } else if (callable->kind() == Variable::Kind::kObject &&
             PyFunction_Check(callable->value().ptr())) {
    code = reinterpret_cast<PyFunctionObject*>(callable->value().ptr())->func_code;  // borrowed
  }
  if (!generator_code(code) || !consumed_by_next_call(site)) {
    return nullptr;
  }
  std::string why;
  return inline_call(callable, site.args, site.kwnames, &why, /*collect=*/true);
}

VarPtr OpcodeExecutor::builtin_sum(const std::vector<VarPtr>& args) {
  if (args.size() == 1) {
    if (VarPtr r = array_of_list(args[0], "sum")) {  // (a list a loop appended to: loop_lists.cpp)
      return r;
    }
  }
  // sum(items[, start]) over a list or tuple whose items are known, with arrays (or Python numbers
  // made in the graph) among them: start + each item in turn, as the builtin adds them (constants
  // alone are folded by the call itself).
  std::vector<VarPtr> items;
  if (args.empty() || args.size() > 2 || is_array_like(args[0]) || !known_items(args[0], &items)) {
    return nullptr;
  }
  // (Python numbers made in the graph add in the graph too: python_numbers.cpp)
  auto made = [this](const VarPtr& v) { return is_array_like(v) || number_operand(v).id >= 0; };
  bool arrays = args.size() == 2 && made(args[1]);
  for (const VarPtr& item : items) {
    arrays = arrays || made(item);
  }
  if (!arrays) {
    return nullptr;
  }
  // A break among the additions breaks at the call, with its values as they were.
  const std::vector<VarPtr> saved = stack_;
  const std::vector<VarPtr>* outer = break_stack_;
  if (outer == nullptr) {
    break_stack_ = &saved;
  }
  constexpr int kAdd = 0;  // NB_ADD
  VarPtr total = args.size() == 2 ? args[1] : Variable::constant(py::int_(0));
  for (const VarPtr& item : items) {
    push(total);
    push(item);
    binary_op(kAdd);
    total = pop();
  }
  break_stack_ = outer;
  return total;
}

}  // namespace sot::translator
