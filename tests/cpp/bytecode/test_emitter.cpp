// The version-neutral emitter: the sequences whose layout differs between 3.11, 3.12 and 3.13
// (calls, method calls, MAKE_FUNCTION with parts and a closure, constants that must stay
// hashable), built from C++ into a code object and run in the embedded interpreter.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/emitter.hpp"
#include "bytecode/opcode_table.hpp"
#include "python_env.hpp"

namespace py = pybind11;
namespace sb = sot::bytecode;

namespace {

// A code object whose body is what `body` emits (after the template's prefix), then RETURN_VALUE.
py::object build(const std::function<void(sb::Emitter&)>& body) {
  const py::dict ns = sot::test::run_python("def template():\n    return None\n");
  const sb::Bytecode original = sb::Bytecode::decode(ns["template"].attr("__code__").ptr());
  std::vector<sb::Instruction> prefix;
  for (std::size_t i = 0; i < original.size(); ++i) {
    prefix.push_back(original.at(i));
    if (original.at(i).opcode == sb::opcode_by_name("RESUME")) {
      break;
    }
  }
  sb::Bytecode bc = sb::Bytecode::from_instructions(prefix, original.template_code().ptr());
  sb::Emitter e(bc);
  e.pos = original.at(prefix.size() - 1).position;
  body(e);
  e.emit("RETURN_VALUE");
  e.finish_into(bc);
  return bc.assemble();
}

py::object run(const py::object& code) {
  const py::dict ns = sot::test::run_python("import types\n");
  return ns["types"].attr("FunctionType")(code, ns)();
}

}  // namespace

TEST(Emitter, CallsAConstantWithArguments) {
  const py::object code = build([](sb::Emitter& e) {
    e.call_constant(
        py::module_::import("builtins").attr("max"),
        [&] {
          e.load_const(py::int_(4));
          e.load_const(py::int_(9));
        },
        2);
  });
  EXPECT_EQ(run(code).cast<int>(), 9);
}

TEST(Emitter, CallsAnAttributeAndKeepsTheReceiver) {
  const py::object code = build([](sb::Emitter& e) {
    e.load_const(py::str("a-b"));
    e.call_attribute("split", py::str("-"));  // ['a', 'b']
    e.call_method_keep("append", py::str("c"));
  });
  EXPECT_EQ(py::repr(run(code)).cast<std::string>(), "['a', 'b', 'c']");
}

TEST(Emitter, CallsWithTheNullWhereThisPythonWantsIt) {
  // [arg, callable] -> callable(arg), and [args tuple, callable] -> callable(*args) discarded.
  const py::object code = build([](sb::Emitter& e) {
    e.emit("BUILD_LIST", 0);
    e.emit("COPY", 1);
    e.load_const(py::make_tuple(7));
    e.emit("SWAP", 2);
    e.load_attr("append");
    e.call_ex_discard();  // list.append(*(7,))
    e.load_const(py::module_::import("builtins").attr("len"));
    e.callable_over_argument();
    e.call(1);  // len(list)
  });
  EXPECT_EQ(run(code).cast<int>(), 1);
}

TEST(Emitter, MakesAFunctionWithDefaultsAndAClosure) {
  const py::dict ns = sot::test::run_python(
      "def outer():\n"
      "    k = 10\n"
      "    def inner(a, b=5):\n"
      "        return a + b + k\n"
      "    return inner\n"
      "import types\n"
      "cell = types.CellType(100)\n");
  const py::object inner_code = ns["outer"]().attr("__code__");
  const py::object code = build([&](sb::Emitter& e) {
    e.make_function(
        inner_code, /*parts=*/1, /*closure=*/true,
        [&](int bit) {
          ASSERT_EQ(bit, 0);
          e.load_const(py::make_tuple(1));  // b=1
        },
        [&] {
          e.load_const(ns["cell"]);
          e.emit("BUILD_TUPLE", 1);
        });
  });
  const py::object fn = run(code);
  EXPECT_EQ(fn(2).cast<int>(), 103);
  EXPECT_EQ(fn(2, 3).cast<int>(), 105);
}

TEST(Emitter, KeepsTheCodeObjectHashable) {
  const py::object slice =
      py::reinterpret_steal<py::object>(PySlice_New(py::int_(1).ptr(), py::int_(3).ptr(), nullptr));
  const py::object code = build([&](sb::Emitter& e) { e.load_const(py::make_tuple(slice, 2)); });
  EXPECT_NE(PyObject_Hash(code.ptr()), -1);
  const py::object value = run(code);
  EXPECT_TRUE(py::object(value[py::int_(0)]).equal(slice));
  EXPECT_EQ(value[py::int_(1)].cast<int>(), 2);
}

TEST(Emitter, JumpsToLabelsAndSkipsWhatAForIterExitSkips) {
  const py::object code = build([](sb::Emitter& e) {
    const int done = e.new_label();
    e.load_const(py::bool_(true));
    e.emit_jump_op("POP_JUMP_IF_TRUE", done);
    e.load_const(py::str("not taken"));
    e.emit("RETURN_VALUE");
    e.place(done);
    e.load_const(py::str("taken"));
  });
  EXPECT_EQ(run(code).cast<std::string>(), "taken");
  // (3.11: nothing to skip; 3.12: END_FOR; 3.13: END_FOR and POP_TOP.)
  const py::dict ns = sot::test::run_python("def template():\n    return None\n");
  sb::Bytecode bc = sb::Bytecode::decode(ns["template"].attr("__code__").ptr());
  sb::Emitter e(bc);
  const std::size_t skip = e.emit_for_iter_exit();
  EXPECT_EQ(skip, e.out.size());
  EXPECT_LE(skip, 2U);
}

TEST(Emitter, StripsTheNullOfACallLoad) {
  const py::dict ns = sot::test::run_python(
      "def f(xs):\n"
      "    return len(xs)\n");
  const sb::Bytecode bc = sb::Bytecode::decode(ns["f"].attr("__code__").ptr());
  bool found = false;
  for (std::size_t i = 0; i < bc.size(); ++i) {
    if (bc.at(i).opcode == sb::opcode_by_name("LOAD_GLOBAL")) {
      sb::Instruction plain;
      int where = -1;
      ASSERT_TRUE(sb::strip_call_null(bc.at(i), &plain, &where));
      EXPECT_EQ(plain.arg & 1, 0);
      EXPECT_EQ(where, sb::call_null_above_callable() ? 1 : 0);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  sb::Instruction other;
  other.opcode = sb::opcode_by_name("LOAD_CONST");
  sb::Instruction plain;
  int where = -1;
  EXPECT_FALSE(sb::strip_call_null(other, &plain, &where));
}

TEST(Emitter, RefusesAnOpcodeThisPythonLacks) {
  EXPECT_THROW(sb::opcode_named("NO_SUCH_OPCODE"), sb::EmitError);
}
