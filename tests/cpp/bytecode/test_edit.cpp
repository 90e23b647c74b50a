// Decode, edit and assemble from C++, running the results in the embedded interpreter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/opcode_table.hpp"
#include "python_env.hpp"

namespace py = pybind11;
namespace sb = sot::bytecode;

namespace {

py::dict sample() {
  return sot::test::run_python(
      "def scale(x, factor=3):\n"
      "    try:\n"
      "        y = x * factor\n"
      "    except TypeError:\n"
      "        return 'bad'\n"
      "    return y\n"
      "def call(fn, code, *args):\n"
      "    import types\n"
      "    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__)(*args)\n");
}

sb::Instruction make(const char* name, int arg = 0) {
  sb::Instruction ins;
  ins.opcode = sb::opcode_by_name(name);
  ins.arg = arg;
  return ins;
}

std::size_t find(const sb::Bytecode& b, const char* name) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b.at(i).opcode == sb::opcode_by_name(name)) {
      return i;
    }
  }
  return b.size();
}

}  // namespace

TEST(BytecodeEdit, RoundTripIsIdentical) {
  const py::dict ns = sample();
  const py::object code = ns["scale"].attr("__code__");
  const py::object again = sb::roundtrip(code.ptr());
  EXPECT_TRUE(again.equal(code));
  EXPECT_TRUE(again.attr("co_code").equal(code.attr("co_code")));
}

TEST(BytecodeEdit, InsertBeforeReturnChangesTheResult) {
  const py::dict ns = sample();
  const py::object fn = ns["scale"];
  sb::Bytecode b = sb::Bytecode::decode(fn.attr("__code__").ptr());
  const int hundred = b.add_const(py::int_(100));
  std::size_t ret = b.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b.at(i).opcode == sb::opcode_by_name("RETURN_VALUE")) {
      ret = i;  // the last one: `return y`
    }
  }
  ASSERT_LT(ret, b.size());
  b.insert(ret, {make("POP_TOP"), make("LOAD_CONST", hundred)});
  const py::object code = b.assemble();
  EXPECT_EQ(ns["call"](fn, code, 2).cast<int>(), 100);
  EXPECT_EQ(ns["call"](fn, code, py::none()).cast<std::string>(),
            "bad");  // the handler still works
}

TEST(BytecodeEdit, InsertedInstructionsInheritHandlerAndPosition) {
  const py::dict ns = sample();
  sb::Bytecode b = sb::Bytecode::decode(ns["scale"].attr("__code__").ptr());
  std::size_t covered = b.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b.at(i).handler && b.at(i).opcode == sb::opcode_by_name("LOAD_FAST")) {
      covered = i;
      break;
    }
  }
  ASSERT_LT(covered, b.size());
  const sb::Instruction before = b.at(covered);
  const std::vector<int> ids = b.insert(covered, {make("NOP")});
  const sb::Instruction& added = b.at(b.index_of(ids[0]));
  EXPECT_TRUE(added.is_new);
  EXPECT_EQ(added.handler, before.handler);
  EXPECT_EQ(added.position, before.position);
}

TEST(BytecodeEdit, BadEditsAreRejectedWithoutDamage) {
  const py::dict ns = sample();
  sb::Bytecode b = sb::Bytecode::decode(ns["scale"].attr("__code__").ptr());
  const std::size_t before = b.size();
  sb::Instruction jump = make("JUMP_FORWARD");
  jump.target = 99999;
  EXPECT_THROW(b.insert(0, {jump}), sb::BytecodeError);
  EXPECT_EQ(b.size(), before);
  EXPECT_THROW(b.remove(before), sb::BytecodeError);
  EXPECT_THROW(b.insert(before + 1, {make("NOP")}), sb::BytecodeError);
  EXPECT_NO_THROW(b.assemble());
  EXPECT_LT(find(b, "RETURN_VALUE"), b.size());
}

TEST(BytecodeEdit, DecodeRejectsNonCode) {
  const py::int_ not_code(3);
  EXPECT_THROW(sb::Bytecode::decode(not_code.ptr()), sb::BytecodeError);
}

namespace {

py::dict loop_sample() {
  return sot::test::run_python(
      "def count_loop(n):\n"
      "    total = 0\n"
      "    for i in range(n):\n"
      "        total += i\n"
      "    return total\n"
      "def guarded(x):\n"
      "    try:\n"
      "        y = x + 1\n"
      "    except TypeError:\n"
      "        return -1\n"
      "    return y\n"
      "def returns_param(v):\n"
      "    return v\n"
      "import opcode, types\n"
      "NB = {name: i for i, (name, _) in enumerate(opcode._nb_ops)}\n"
      "def call(fn, code, *args):\n"
      "    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__)(*args)\n");
}

std::size_t last(const sb::Bytecode& b, const char* name) {
  std::size_t found = b.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b.at(i).opcode == sb::opcode_by_name(name)) {
      found = i;
    }
  }
  return found;
}

// count_loop edited to count how often its loop header runs, returning that count.
py::object visits_code(const py::dict& ns, bool retarget) {
  sb::Bytecode b = sb::Bytecode::decode(ns["count_loop"].attr("__code__").ptr());
  const int visits = b.add_local("visits");
  const int zero = b.add_const(py::int_(0));
  const int one = b.add_const(py::int_(1));
  const int inplace_add = ns["NB"]["NB_INPLACE_ADD"].cast<int>();
  b.insert(find(b, "RESUME") + 1, {make("LOAD_CONST", zero), make("STORE_FAST", visits)});
  b.insert(find(b, "FOR_ITER"),
           {make("LOAD_FAST", visits), make("LOAD_CONST", one), make("BINARY_OP", inplace_add),
            make("STORE_FAST", visits)},
           sb::InsertOptions{retarget});
  b.insert(last(b, "RETURN_VALUE"), {make("POP_TOP"), make("LOAD_FAST", visits)});
  return b.assemble();
}

}  // namespace

TEST(BytecodeEdit, InsertBeforeAJumpTargetWithAndWithoutRetarget) {
  const py::dict ns = loop_sample();
  const py::object fn = ns["count_loop"];
  EXPECT_EQ(ns["call"](fn, visits_code(ns, true), 5).cast<int>(),
            6);  // every jump back runs the new code
  EXPECT_EQ(ns["call"](fn, visits_code(ns, false), 5).cast<int>(),
            1);  // only the fall-through entry does
}

TEST(BytecodeEdit, InsertInsideATryBlockIsCoveredByItsHandler) {
  const py::dict ns = loop_sample();
  sb::Bytecode b = sb::Bytecode::decode(ns["guarded"].attr("__code__").ptr());
  std::size_t inside = b.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b.at(i).handler && b.at(i).opcode == sb::opcode_by_name("LOAD_FAST")) {
      inside = i;
      break;
    }
  }
  ASSERT_LT(inside, b.size());
  const int none = b.add_const(py::none());
  const int one = b.add_const(py::int_(1));
  // None + 1 raises TypeError inside the try block: the handler returns -1
  b.insert(inside, {make("LOAD_CONST", none), make("LOAD_CONST", one),
                    make("BINARY_OP", ns["NB"]["NB_ADD"].cast<int>()), make("POP_TOP")});
  EXPECT_EQ(ns["call"](ns["guarded"], b.assemble(), 1).cast<int>(), -1);
}

TEST(BytecodeEdit, InsertAtAHandlersStartRunsWhenTheHandlerDoes) {
  const py::dict ns = loop_sample();
  sb::Bytecode b = sb::Bytecode::decode(ns["guarded"].attr("__code__").ptr());
  int handler_id = -1;
  for (const sb::Instruction& ins : b.instructions()) {
    if (ins.handler) {
      handler_id = ins.handler->target;
      break;
    }
  }
  ASSERT_GE(handler_id, 0);
  const int marker = b.add_const(py::int_(77));
  const int name = b.add_name("handler_marker");
  b.insert(b.index_of(handler_id), {make("LOAD_CONST", marker), make("STORE_GLOBAL", name)},
           sb::InsertOptions{true});
  const py::object code = b.assemble();
  EXPECT_EQ(ns["call"](ns["guarded"], code, 1).cast<int>(), 2);
  EXPECT_FALSE(ns.contains("handler_marker"));
  EXPECT_EQ(ns["call"](ns["guarded"], code, py::str("text")).cast<int>(), -1);
  EXPECT_EQ(ns["handler_marker"].cast<int>(), 77);
}

TEST(BytecodeEdit, RemoveInstructions) {
  const py::dict ns = loop_sample();
  sb::Bytecode b = sb::Bytecode::decode(ns["guarded"].attr("__code__").ptr());
  const std::size_t before = b.size();
  b.remove(find(b, "RESUME"));
  EXPECT_EQ(b.size(), before - 1);
  EXPECT_EQ(ns["call"](ns["guarded"], b.assemble(), 4).cast<int>(), 5);
}

TEST(BytecodeEdit, ArgumentsPast255And65535GetExtendedArg) {
  const py::dict ns = loop_sample();
  for (const int count : {300, 70000}) {
    sb::Bytecode b = sb::Bytecode::decode(ns["returns_param"].attr("__code__").ptr());
    for (int k = 0; k < count - 1; ++k) {
      b.add_const(py::make_tuple("filler", k));
    }
    const py::object wanted = py::make_tuple("wanted", count);
    const int index = b.add_const(wanted);
    ASSERT_GE(index, count - 1);
    b.insert(last(b, "RETURN_VALUE"), {make("POP_TOP"), make("LOAD_CONST", index)});
    const py::object code = b.assemble();
    const std::string raw = code.attr("co_code").cast<std::string>();
    const int prefixes = count > 65535 ? 2 : 1;
    int found = 0;
    for (std::size_t p = 0; p + 1 < raw.size(); p += 2) {
      if (static_cast<unsigned char>(raw[p]) == sb::extended_arg_opcode()) {
        ++found;
      }
    }
    EXPECT_EQ(found, prefixes) << count;
    EXPECT_TRUE(ns["call"](ns["returns_param"], code, 1).is(wanted)) << count;
  }
}
