// The generated opcode table against the interpreter's own <opcode.h> (the C++ tests link
// Debian's 3.11).
#include "bytecode/opcode_table.hpp"

#include <Python.h>
#include <gtest/gtest.h>
#include <opcode.h>

#include <string>
#include <utility>
#include <vector>

namespace sb = sot::bytecode;

TEST(OpcodeTable, NumbersMatchTheInterpretersHeader) {
#define SOT_OPCODE_ENTRY(name) \
  { #name, name }
  const std::vector<std::pair<std::string, int>> expected = {
      SOT_OPCODE_ENTRY(NOP),
      SOT_OPCODE_ENTRY(POP_TOP),
      SOT_OPCODE_ENTRY(LOAD_FAST),
      SOT_OPCODE_ENTRY(STORE_FAST),
      SOT_OPCODE_ENTRY(LOAD_CONST),
      SOT_OPCODE_ENTRY(LOAD_GLOBAL),
      SOT_OPCODE_ENTRY(BINARY_OP),
      SOT_OPCODE_ENTRY(RETURN_VALUE),
      SOT_OPCODE_ENTRY(FOR_ITER),
      SOT_OPCODE_ENTRY(JUMP_FORWARD),
      SOT_OPCODE_ENTRY(JUMP_BACKWARD),
      SOT_OPCODE_ENTRY(EXTENDED_ARG),
      SOT_OPCODE_ENTRY(CALL),
      SOT_OPCODE_ENTRY(RESUME),
      SOT_OPCODE_ENTRY(PUSH_EXC_INFO),
      SOT_OPCODE_ENTRY(LOAD_DEREF),
      SOT_OPCODE_ENTRY(MAKE_CELL),
      SOT_OPCODE_ENTRY(RETURN_GENERATOR),
      SOT_OPCODE_ENTRY(LOAD_GLOBAL_BUILTIN),
      SOT_OPCODE_ENTRY(BINARY_OP_ADD_INT),
      SOT_OPCODE_ENTRY(LOAD_ATTR_INSTANCE_VALUE),
  };
#undef SOT_OPCODE_ENTRY
  for (const auto& [name, code] : expected) {
    EXPECT_EQ(sb::opcode_by_name(name), code) << name;
    EXPECT_STREQ(sb::opcode_info(code).name, name.c_str());
  }
}

TEST(OpcodeTable, SpecialisedOpcodesMapToTheirBase) {
  EXPECT_EQ(sb::opcode_info(sb::opcode_by_name("LOAD_GLOBAL_BUILTIN")).base,
            sb::opcode_by_name("LOAD_GLOBAL"));
  EXPECT_EQ(sb::opcode_info(sb::opcode_by_name("BINARY_OP_ADD_INT")).base,
            sb::opcode_by_name("BINARY_OP"));
  const sb::OpcodeInfo& load_fast = sb::opcode_info(sb::opcode_by_name("LOAD_FAST"));
  EXPECT_EQ(load_fast.base, load_fast.code);
  EXPECT_EQ(load_fast.arg_kind, sb::ArgKind::kLocal);
}

TEST(OpcodeTable, FlagsAndCaches) {
  const sb::OpcodeInfo& jump = sb::opcode_info(sb::opcode_by_name("JUMP_BACKWARD"));
  EXPECT_TRUE(jump.is_jump());
  EXPECT_FALSE(jump.falls_through());
  EXPECT_EQ(jump.arg_kind, sb::ArgKind::kJumpBackward);
  EXPECT_TRUE(jump.is_unconditional_jump());
  EXPECT_FALSE(jump.is_terminator());
  const sb::OpcodeInfo& ret = sb::opcode_info(sb::opcode_by_name("RETURN_VALUE"));
  EXPECT_FALSE(ret.falls_through());
  EXPECT_TRUE(ret.is_terminator());
  EXPECT_FALSE(sb::opcode_info(sb::opcode_by_name("FOR_ITER")).is_unconditional_jump());
  EXPECT_FALSE(ret.has_arg());
  EXPECT_GT(sb::opcode_info(sb::opcode_by_name("LOAD_GLOBAL")).cache_entries, 0);
  EXPECT_FALSE(sb::opcode_info(300).valid());
  EXPECT_EQ(sb::opcode_by_name("NOT_AN_OPCODE"), -1);
}

TEST(OpcodeTable, StackEffectsComeFromTheInterpreter) {
  int effect = 0;
  ASSERT_TRUE(sb::stack_effect(sb::opcode_by_name("BUILD_TUPLE"), 3, false, &effect));
  EXPECT_EQ(effect, -2);
  ASSERT_TRUE(sb::stack_effect(sb::opcode_by_name("LOAD_CONST"), 0, false, &effect));
  EXPECT_EQ(effect, 1);
}
