// Operators: BINARY_OP, COMPARE_OP, IS_OP, CONTAINS_OP, the unary operators, TO_BOOL, and string
// formatting (FORMAT_VALUE and 3.13's forms, BUILD_STRING). Operations on constants fold; on
// arrays they are captured (array_ops.cpp).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "bytecode/operands.hpp"
#include "translator/executor_support.hpp"
#include "translator/handlers/binary_operators.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

constexpr std::size_t kMaxFoldedLength = 10000;  // longest str/bytes/tuple a fold may make
constexpr long kMaxFoldedBits = 100000;          // largest int a fold may make

// Whether folding `op` on a and b could make a huge value (then it runs for real instead).
bool too_big(int base, const py::object& a, const py::object& b) {
  constexpr int kLshift = 3;
  constexpr int kMultiply = 5;
  constexpr int kPower = 8;
  auto as_long = [](const py::object& o, long* out) {
    if (!PyLong_CheckExact(o.ptr())) {
      return false;
    }
    int overflow = 0;
    *out = PyLong_AsLongAndOverflow(o.ptr(), &overflow);
    return overflow == 0;
  };
  long n = 0;
  if (base == kLshift && PyLong_CheckExact(a.ptr())) {
    return !as_long(b, &n) || n > kMaxFoldedBits;
  }
  if (base == kPower && PyLong_CheckExact(a.ptr()) && PyLong_CheckExact(b.ptr())) {
    const auto bits = static_cast<long>(_PyLong_NumBits(a.ptr()));
    return !as_long(b, &n) || (n > 0 && bits > 1 && bits * n > kMaxFoldedBits);
  }
  if (base == kMultiply) {
    const py::object& seq = PyLong_CheckExact(a.ptr()) ? b : a;
    const py::object& count = PyLong_CheckExact(a.ptr()) ? a : b;
    if (PySequence_Check(seq.ptr()) != 0 && PyLong_CheckExact(count.ptr())) {
      const Py_ssize_t len = PyObject_Length(seq.ptr());
      PyErr_Clear();
      return !as_long(count, &n) ||
             (n > 0 && len > 0 &&
              static_cast<std::size_t>(n) > kMaxFoldedLength / static_cast<std::size_t>(len));
    }
  }
  return false;
}

}  // namespace

void OpcodeExecutor::binary_op(int op) {
  if (array_binary_op(op) || python_number_binary(op)) {
    return;
  }
  const BinaryOperator* bo = binary_operator(op);
  if (bo == nullptr) {
    fail("BINARY_OP with an unknown operator " + std::to_string(op) + " (malformed bytecode)");
  }
  const std::string symbol = bo->symbol;
  const VarPtr b = peek(1);
  const VarPtr a = peek(2);
  constexpr int kAdd = 0;
  constexpr int kInplaceAdd = 13;
  const bool tuples = a->kind() == Variable::Kind::kTuple && b->kind() == Variable::Kind::kTuple;
  const bool new_lists =
      a->kind() == Variable::Kind::kList && b->kind() == Variable::Kind::kList && op == kAdd;
  if ((tuples && (op == kAdd || op == kInplaceAdd)) || new_lists) {
    // Concatenation makes a new container of the same item Variables.
    std::vector<VarPtr> items = a->items();
    items.insert(items.end(), b->items().begin(), b->items().end());
    pop();
    pop();
    push(tuples ? Variable::tuple(std::move(items)) : Variable::list(std::move(items)));
    return;
  }
  if (!(a->is_const() && b->is_const())) {
    // Containers built inside of constants fold like constants (a % (x, y), (1, 2) + t).
    const py::object av =
        (a->is_const() || a->kind() == Variable::Kind::kTuple) ? constant_value(a) : py::object();
    const py::object bv = (av && (b->is_const() || b->kind() == Variable::Kind::kTuple))
                              ? constant_value(b)
                              : py::object();
    if (av && bv) {
      if (too_big(bo->base, av, bv)) {
        graph_break("the result of " + symbol + " would be too large to fold");
      }
      PyObject* r = bo->number(av.ptr(), bv.ptr());
      if (r == nullptr) {
        PyErr_Clear();
        graph_break("operator " + symbol + " raises on " + a->describe() + " and " + b->describe());
      }
      VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
      if (!v) {
        graph_break("operator " + symbol + " made a value it does not model");
      }
      pop();
      pop();
      push(std::move(v));
      return;
    }
  }
  if (a->is_const() && b->is_const()) {
    if (too_big(bo->base, a->value(), b->value())) {
      graph_break("the result of " + symbol + " would be too large to fold");
    }
    PyObject* r = bo->number(a->value().ptr(), b->value().ptr());
    if (r == nullptr) {
      PyErr_Clear();
      graph_break("operator " + symbol + " raises on " + a->describe() + " and " + b->describe());
    }
    const auto result = py::reinterpret_steal<py::object>(r);
    VarPtr v = make_result(result);
    if (!v) {
      graph_break("operator " + symbol + " made a value it does not model");
    }
    guards_->value(a);
    guards_->value(b);
    pop();
    pop();
    push(std::move(v));
    return;
  }
  // Tuples and lists built inside, with + and *: new containers of the same items.
  graph_break("operator " + symbol + " on " + a->describe() + " and " + b->describe());
}

void OpcodeExecutor::unary(PyObject* (*operation)(PyObject*)) {
  const VarPtr& a = peek(1);
  if (!a->is_const()) {
    graph_break("a unary operator on " + a->describe());
  }
  PyObject* r = operation(a->value().ptr());
  if (r == nullptr) {
    PyErr_Clear();
    graph_break("a unary operator raises on " + a->describe());
  }
  VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
  if (!v) {
    graph_break("a unary operator made a value it does not model");
  }
  guards_->value(a);
  pop();
  push(std::move(v));
}

void OpcodeExecutor::compare_op(int op) {
  const VarPtr& b = peek(1);
  const VarPtr& a = peek(2);
  if (op < Py_LT || op > Py_GE) {
    fail("unknown comparison " + std::to_string(op));
  }
  static const std::array<const char*, 6> symbols = {"<", "<=", "==", "!=", ">", ">="};
  if (array_compare_op(op) || python_number_compare(op)) {
    return;
  }
  const py::object av = constant_value(a);
  const py::object bv = (av ? constant_value(b) : py::object());
  if (!av || !bv) {
    graph_break(std::string("comparison ") + symbols[static_cast<std::size_t>(op)] + " of " +
                a->describe() + " and " + b->describe());
  }
  PyObject* r = PyObject_RichCompare(av.ptr(), bv.ptr(), op);
  if (r == nullptr) {
    PyErr_Clear();
    graph_break(std::string("comparison ") + symbols[static_cast<std::size_t>(op)] + " raises");
  }
  const auto result = py::reinterpret_steal<py::object>(r);
  VarPtr v = make_result(result);
  if (!v) {
    graph_break("a comparison returned a value it does not model");
  }
  pop();
  pop();
  push(std::move(v));
}

bool OpcodeExecutor::truth(const VarPtr& v, bool* value) {
  switch (v->kind()) {
    case Variable::Kind::kConst: {
      const int t = PyObject_IsTrue(v->value().ptr());
      if (t < 0) {
        PyErr_Clear();
        return false;
      }
      guards_->value(v);
      *value = t == 1;
      return true;
    }
    case Variable::Kind::kTuple:
    case Variable::Kind::kList:
      *value = !v->items().empty();
      return true;
    case Variable::Kind::kDict:
    case Variable::Kind::kSet:
      *value = !v->keys().empty();
      return true;
    case Variable::Kind::kInstance: {  // true, unless its class says otherwise
      auto* type = reinterpret_cast<PyTypeObject*>(v->cls()->value().ptr());
      *value = true;
      return _PyType_Lookup(type, py::str("__bool__").ptr()) == nullptr &&
             _PyType_Lookup(type, py::str("__len__").ptr()) == nullptr;
    }
    default:
      return false;
  }
}

void OpcodeExecutor::op_binary_op(const bytecode::Instruction& ins) {
  drop_values(2);  // (temporaries the operator frees)
  binary_op(ins.arg);
}

void OpcodeExecutor::op_compare_op(const bytecode::Instruction& ins) {
  drop_values(2);
  compare_op(bytecode::operand::comparison(ins.arg));
}

void OpcodeExecutor::op_is_op(const bytecode::Instruction& ins) {
  const VarPtr& b = peek(1);
  const VarPtr& a = peek(2);
  // Identity is decided only against singletons (None, True, False, Ellipsis), whose equality
  // guard (same type, equal) implies identity.
  auto singleton = [](const VarPtr& v) {
    const PyObject* o = v->value().ptr();
    return v->is_const() && (o == Py_None || o == Py_True || o == Py_False || o == Py_Ellipsis);
  };
  // A value that is not a constant is no singleton: an object received from outside (its
  // type guarded) or made inside. Two Variables are one object; values made inside are
  // distinct.
  auto not_singleton = [&](const VarPtr& v) {
    if (v->kind() == Variable::Kind::kObject && v->tracker().is_input()) {
      guards_->type(v);
      return true;
    }
    return v->is_mutable_created();
  };
  bool identical = false;
  const bool inputs = a->kind() == Variable::Kind::kObject && b->kind() == Variable::Kind::kObject;
  if (a == b && (a->kind() == Variable::Kind::kObject || a->is_mutable_created())) {
    identical = true;
  } else if (inputs && (PyType_Check(a->value().ptr()) || PyType_Check(b->value().ptr()))) {
    // Classes (type(x) is C): decided by identity, both guarded.
    guards_->identity(a);
    guards_->identity(b);
    identical = a->value().ptr() == b->value().ptr();
  } else if (a->is_mutable_created() && b->is_mutable_created()) {
    identical = false;
  } else if ((singleton(a) && !b->is_const() && not_singleton(b)) ||
             (singleton(b) && !a->is_const() && not_singleton(a))) {
    guards_->value(singleton(a) ? a : b);
    identical = false;
  } else if (a->is_const() && b->is_const() && (singleton(a) || singleton(b))) {
    guards_->value(a);
    guards_->value(b);
    identical = a->value().ptr() == b->value().ptr();
  } else {
    graph_break("an identity test of " + a->describe() + " and " + b->describe());
  }
  const bool same = identical != (ins.arg == 1);
  pop();
  pop();
  push(Variable::constant(py::bool_(same)));
}

void OpcodeExecutor::op_contains_op(const bytecode::Instruction& ins) {
  const VarPtr& container = peek(1);
  const VarPtr& item = peek(2);
  const VarPtr model = model_of(container);
  if (container->kind() == Variable::Kind::kDict || container->kind() == Variable::Kind::kSet ||
      (model && model->kind() == Variable::Kind::kDict)) {
    const py::object k = hashable_key(item);
    const Py_ssize_t i = k ? (model ? model : container)->find_key(k) : -2;
    if (i == -2) {
      graph_break("an 'in' test of " + item->describe() + " in " + container->describe());
    }
    pop();
    pop();
    push(Variable::constant(py::bool_((i >= 0) != (ins.arg == 1))));
    return;
  }
  const py::object c = constant_value(container);
  const py::object i = c ? constant_value(item) : py::object();
  if (!c || !i) {
    graph_break("an 'in' test of " + item->describe() + " in " + container->describe());
  }
  const int found = PySequence_Contains(c.ptr(), i.ptr());
  if (found < 0) {
    PyErr_Clear();
    graph_break("an 'in' test raises");
  }
  pop();
  pop();
  push(Variable::constant(py::bool_((found == 1) != (ins.arg == 1))));
}

void OpcodeExecutor::op_call_intrinsic_1(const bytecode::Instruction& ins) {
  // 3.12+: INTRINSIC_UNARY_POSITIVE (5) and INTRINSIC_LIST_TO_TUPLE (6) are the old opcodes.
  constexpr int kUnaryPositive = 5;
  constexpr int kListToTuple = 6;
  if (ins.arg == kListToTuple) {
    list_to_tuple();
    return;
  }
  if (ins.arg != kUnaryPositive) {
    graph_break("intrinsic function " + std::to_string(ins.arg) + " is not simulated");
  }
  if (!array_unary("pos") && !python_number_unary("pos")) {
    unary(PyNumber_Positive);
  }
}

void OpcodeExecutor::op_unary_negative(const bytecode::Instruction& /*ins*/) {
  if (!array_unary("neg") && !python_number_unary("neg")) {
    unary(PyNumber_Negative);
  }
}

void OpcodeExecutor::op_unary_positive(const bytecode::Instruction& /*ins*/) {
  if (!array_unary("pos") && !python_number_unary("pos")) {
    unary(PyNumber_Positive);
  }
}

void OpcodeExecutor::op_unary_invert(const bytecode::Instruction& /*ins*/) {
  if (peek(1)->is_const() && PyBool_Check(peek(1)->value().ptr())) {
    // (folded, its DeprecationWarning - Python 3.12 and later - would come on the translating
    // call alone)
    graph_break("~ of a bool: Python warns (DeprecationWarning) on each call");
  }
  if (!array_unary("invert") && !python_number_unary("invert")) {
    unary(PyNumber_Invert);
  }
}

void OpcodeExecutor::to_bool(bool negate) {
  bool value = false;
  if (!truth(peek(1), &value)) {
    graph_break("the truth of " + peek(1)->describe());
  }
  pop();
  push(Variable::constant(py::bool_(negate ? !value : value)));
}

void OpcodeExecutor::op_unary_not(const bytecode::Instruction& /*ins*/) {
  to_bool(true);
}

void OpcodeExecutor::op_to_bool(const bytecode::Instruction& /*ins*/) {
  // (3.13: a value of the graph tested by the next jump stays as it is: the jump takes its truth,
  // as on 3.11 and 3.12, where a while loop's test may capture the loop)
  const auto& code = code_.instructions();
  if (peek(1)->kind() == Variable::Kind::kArray && pc_ + 1 < code.size()) {
    const std::string next = bytecode::opcode_info(code[pc_ + 1].opcode).name;
    if (next == "POP_JUMP_IF_TRUE" || next == "POP_JUMP_IF_FALSE") {
      return;
    }
  }
  to_bool(false);
}

// FORMAT_VALUE: arg & 3 = conversion (none, str, repr, ascii), arg & 4 = a spec on the stack.
// 3.13 splits it into CONVERT_VALUE (1 str, 2 repr, 3 ascii), FORMAT_SIMPLE and FORMAT_WITH_SPEC.
void OpcodeExecutor::format(int conversion, bool has_spec, bool convert_only) {
  const VarPtr spec = has_spec ? peek(1) : nullptr;
  const VarPtr value = peek(has_spec ? 2 : 1);
  if (format_in_graph(value, spec, conversion, convert_only)) {
    return;  // (python_numbers.cpp)
  }
  if (!value->is_const() || (spec && !spec->is_const())) {
    graph_break("formatting " + value->describe());
  }
  PyObject* v = value->value().ptr();
  py::object converted;
  switch (conversion) {
    case 1:
      converted = py::reinterpret_steal<py::object>(PyObject_Str(v));
      break;
    case 2:
      converted = py::reinterpret_steal<py::object>(PyObject_Repr(v));
      break;
    case 3:
      converted = py::reinterpret_steal<py::object>(PyObject_ASCII(v));
      break;
    default:
      converted = value->value();
      break;
  }
  if (!converted) {
    PyErr_Clear();
    graph_break("a conversion raises");
  }
  py::object out = converted;
  if (!convert_only) {
    PyObject* f = PyObject_Format(converted.ptr(), spec ? spec->value().ptr() : nullptr);
    if (f == nullptr) {
      PyErr_Clear();
      graph_break("formatting raises");
    }
    out = py::reinterpret_steal<py::object>(f);
  }
  guards_->value(value);
  if (spec) {
    guards_->value(spec);
    pop();
  }
  pop();
  push(make_result(out));
}

void OpcodeExecutor::op_format_value(const bytecode::Instruction& ins) {
  format(ins.arg & 3, (ins.arg & 4) != 0, false);
}

void OpcodeExecutor::op_format_simple(const bytecode::Instruction& /*ins*/) {
  format(0, false, false);
}

void OpcodeExecutor::op_format_with_spec(const bytecode::Instruction& /*ins*/) {
  format(0, true, false);
}

void OpcodeExecutor::op_convert_value(const bytecode::Instruction& ins) {
  format(ins.arg, false, true);
}

void OpcodeExecutor::op_build_string(const bytecode::Instruction& ins) {
  if (join_in_graph(ins.arg)) {
    return;  // (python_numbers.cpp)
  }
  py::list parts;
  for (int i = ins.arg; i > 0; --i) {
    const VarPtr& v = peek(static_cast<std::size_t>(i));
    if (!v->is_const() || !PyUnicode_CheckExact(v->value().ptr())) {
      graph_break("joining " + v->describe());
    }
    parts.append(v->value());
  }
  const py::object joined = py::str("").attr("join")(parts);
  for (int i = 0; i < ins.arg; ++i) {
    guards_->value(peek(1));
    pop();
  }
  push(make_result(joined));
}

}  // namespace sot::translator
