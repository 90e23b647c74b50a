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
