#include "bytecode/stack_inputs.hpp"

#include <string>

#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"

namespace sot::bytecode {

int values_taken(const Instruction& ins) {
  const std::string name = opcode_info(ins.opcode).name;
  const int arg = ins.arg;
  struct Fixed {
    const char* name;
    int count;
  };
  static const Fixed fixed[] = {{"BINARY_OP", 2},
                                {"COMPARE_OP", 2},
                                {"IS_OP", 2},
                                {"CONTAINS_OP", 2},
                                {"BINARY_SUBSCR", 2},
                                {"BINARY_SLICE", 3},
                                {"STORE_SUBSCR", 3},
                                {"DELETE_SUBSCR", 2},
                                {"STORE_SLICE", 4},
                                {"LOAD_ATTR", 1},
                                {"LOAD_METHOD", 1},
                                {"STORE_ATTR", 2},
                                {"DELETE_ATTR", 1},
                                {"UNARY_NEGATIVE", 1},
                                {"UNARY_POSITIVE", 1},
                                {"UNARY_NOT", 1},
                                {"UNARY_INVERT", 1},
                                {"TO_BOOL", 1},
                                {"GET_ITER", 1},
                                {"GET_LEN", 0},
                                {"FORMAT_SIMPLE", 1},
                                {"FORMAT_WITH_SPEC", 2},
                                {"CONVERT_VALUE", 1},
                                {"CALL_INTRINSIC_1", 1},
                                {"CALL_INTRINSIC_2", 2},
                                {"LIST_APPEND", 1},
                                {"SET_ADD", 1},
                                {"LIST_EXTEND", 1},
                                {"SET_UPDATE", 1},
                                {"DICT_UPDATE", 1},
                                {"DICT_MERGE", 1},
                                {"MAP_ADD", 2},
                                {"UNPACK_SEQUENCE", 1},
                                {"UNPACK_EX", 1},
                                {"STORE_GLOBAL", 1},
                                {"STORE_DEREF", 1},
                                {"STORE_NAME", 1},
                                {"LOAD_GLOBAL", 0},
                                {"LOAD_DEREF", 0},
                                {"LOAD_CLOSURE", 0},
                                {"LOAD_NAME", 0},
                                {"LOAD_CONST", 0},
                                {"LOAD_FAST", 0},
                                {"LOAD_FAST_CHECK", 0},
                                {"DELETE_FAST", 0},
                                {"DELETE_DEREF", 0},
                                {"DELETE_GLOBAL", 0},
                                {"DELETE_NAME", 0},
                                {"LOAD_ASSERTION_ERROR", 0},
                                {"LOAD_BUILD_CLASS", 0},
                                {"IMPORT_NAME", 2},
                                {"IMPORT_FROM", 0},
                                {"POP_JUMP_IF_TRUE", 1},
                                {"POP_JUMP_IF_FALSE", 1},
                                {"POP_JUMP_IF_NONE", 1},
                                {"POP_JUMP_IF_NOT_NONE", 1},
                                {"POP_JUMP_FORWARD_IF_TRUE", 1},
                                {"POP_JUMP_FORWARD_IF_FALSE", 1},
                                {"POP_JUMP_FORWARD_IF_NONE", 1},
                                {"POP_JUMP_FORWARD_IF_NOT_NONE", 1},
                                {"POP_JUMP_BACKWARD_IF_TRUE", 1},
                                {"POP_JUMP_BACKWARD_IF_FALSE", 1},
                                {"POP_JUMP_BACKWARD_IF_NONE", 1},
                                {"POP_JUMP_BACKWARD_IF_NOT_NONE", 1},
                                {"JUMP_IF_TRUE_OR_POP", 1},
                                {"JUMP_IF_FALSE_OR_POP", 1},
                                {"FOR_ITER", 1},
                                {"RETURN_VALUE", 1},
                                {"RETURN_CONST", 0},
                                {"SET_FUNCTION_ATTRIBUTE", 2},
                                {"BEFORE_WITH", 1},
                                {"GET_YIELD_FROM_ITER", 1},
                                {"LOAD_FROM_DICT_OR_DEREF", 1},
                                {"LOAD_FROM_DICT_OR_GLOBALS", 1},
                                {"PRINT_EXPR", 1},
                                {"POP_TOP", 1},
                                {"NOP", 0}};
  for (const Fixed& f : fixed) {
    if (name == f.name) {
      return f.count;
    }
  }
  if (name == "CALL") {
    return arg + 2;
  }
  if (name == "CALL_KW") {
    return arg + 3;
  }
  if (name == "CALL_FUNCTION_EX") {
    return 3 + (arg & 1);
  }
  if (name == "FORMAT_VALUE") {
    return 1 + ((arg & 4) != 0 ? 1 : 0);
  }
  if (name == "BUILD_TUPLE" || name == "BUILD_LIST" || name == "BUILD_SET" ||
      name == "BUILD_STRING" || name == "BUILD_SLICE" || name == "RAISE_VARARGS") {
    return arg;
  }
  if (name == "BUILD_MAP") {
    return 2 * arg;
  }
  if (name == "BUILD_CONST_KEY_MAP") {
    return arg + 1;
  }
  if (name == "MAKE_FUNCTION") {
    if constexpr (version::kMakeFunctionHasFlags) {
      int flags = 0;
      for (int bit = 0; bit < 4; ++bit) {
        flags += (arg >> bit) & 1;
      }
      return 1 + flags;
    }
    return 1;
  }
  return -1;
}

}  // namespace sot::bytecode
