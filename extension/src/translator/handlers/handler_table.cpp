// The opcode table of the executor: each opcode it simulates, by name, and its handler. Names
// absent from this Python's opcode list are skipped, so one table serves 3.11, 3.12 and 3.13.
// A new opcode: write its handler in the family's handlers_<family>.cpp, declare it in
// opcode_executor.hpp, add its row here.
#include <array>
#include <string>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

const std::array<OpcodeExecutor::Handler, 256>& OpcodeExecutor::handlers() {
  using E = OpcodeExecutor;
  struct Row {
    const char* opcode;
    Handler handler;
  };
  static const std::vector<Row> rows = {
      // locals, constants, globals, entry and return
      {"NOP", &E::op_nop},
      {"COPY_FREE_VARS", &E::op_nop},
      {"RESUME", &E::op_resume},
      {"LOAD_FAST", &E::op_load_fast},
      {"LOAD_FAST_CHECK", &E::op_load_fast},
      {"LOAD_FAST_AND_CLEAR", &E::op_load_fast_and_clear},
      {"LOAD_FAST_LOAD_FAST", &E::op_load_fast_load_fast},
      {"STORE_FAST", &E::op_store_fast},
      {"STORE_FAST_LOAD_FAST", &E::op_store_fast_load_fast},
      {"STORE_FAST_STORE_FAST", &E::op_store_fast_store_fast},
      {"DELETE_FAST", &E::op_delete_fast},
      {"LOAD_CONST", &E::op_load_const},
      {"RETURN_VALUE", &E::op_return_value},
      {"RETURN_CONST", &E::op_return_const},
      {"LOAD_GLOBAL", &E::op_load_global},
      {"STORE_GLOBAL", &E::op_store_global},
      {"DELETE_GLOBAL", &E::op_delete_global},
      {"IMPORT_NAME", &E::op_import_name},
      {"IMPORT_FROM", &E::op_import_from},
      // the value stack
      {"POP_TOP", &E::op_pop_top},
      {"PUSH_NULL", &E::op_push_null},
      {"COPY", &E::op_copy},
      {"SWAP", &E::op_swap},
      // operators
      {"BINARY_OP", &E::op_binary_op},
      {"COMPARE_OP", &E::op_compare_op},
      {"IS_OP", &E::op_is_op},
      {"CONTAINS_OP", &E::op_contains_op},
      {"CALL_INTRINSIC_1", &E::op_call_intrinsic_1},
      {"UNARY_NEGATIVE", &E::op_unary_negative},
      {"UNARY_POSITIVE", &E::op_unary_positive},
      {"UNARY_INVERT", &E::op_unary_invert},
      {"UNARY_NOT", &E::op_unary_not},
      {"TO_BOOL", &E::op_to_bool},
      {"FORMAT_VALUE", &E::op_format_value},
      {"FORMAT_SIMPLE", &E::op_format_simple},
      {"FORMAT_WITH_SPEC", &E::op_format_with_spec},
      {"CONVERT_VALUE", &E::op_convert_value},
      {"BUILD_STRING", &E::op_build_string},
      // control flow
      {"POP_JUMP_IF_TRUE", &E::op_pop_jump_if_true},
      {"POP_JUMP_FORWARD_IF_TRUE", &E::op_pop_jump_if_true},
      {"POP_JUMP_BACKWARD_IF_TRUE", &E::op_pop_jump_if_true},
      {"POP_JUMP_IF_FALSE", &E::op_pop_jump_if_false},
      {"POP_JUMP_FORWARD_IF_FALSE", &E::op_pop_jump_if_false},
      {"POP_JUMP_BACKWARD_IF_FALSE", &E::op_pop_jump_if_false},
      {"POP_JUMP_IF_NONE", &E::op_pop_jump_if_none},
      {"POP_JUMP_FORWARD_IF_NONE", &E::op_pop_jump_if_none},
      {"POP_JUMP_BACKWARD_IF_NONE", &E::op_pop_jump_if_none},
      {"POP_JUMP_IF_NOT_NONE", &E::op_pop_jump_if_not_none},
      {"POP_JUMP_FORWARD_IF_NOT_NONE", &E::op_pop_jump_if_not_none},
      {"POP_JUMP_BACKWARD_IF_NOT_NONE", &E::op_pop_jump_if_not_none},
      {"JUMP_IF_TRUE_OR_POP", &E::op_jump_if_true_or_pop},
      {"JUMP_IF_FALSE_OR_POP", &E::op_jump_if_false_or_pop},
      {"JUMP_FORWARD", &E::op_jump},
      {"JUMP_BACKWARD", &E::op_jump},
      {"JUMP_BACKWARD_NO_INTERRUPT", &E::op_jump},
      // building containers
      {"BUILD_TUPLE", &E::op_build_tuple},
      {"BUILD_LIST", &E::op_build_list},
      {"LIST_APPEND", &E::op_list_append},
      {"LIST_EXTEND", &E::op_list_extend},
      {"LIST_TO_TUPLE", &E::op_list_to_tuple},
      {"BUILD_SLICE", &E::op_build_slice},
      {"BUILD_MAP", &E::op_build_map},
      {"BUILD_CONST_KEY_MAP", &E::op_build_const_key_map},
      {"MAP_ADD", &E::op_map_add},
      {"DICT_UPDATE", &E::op_dict_update},
      {"DICT_MERGE", &E::op_dict_merge},
      {"BUILD_SET", &E::op_build_set},
      {"SET_ADD", &E::op_set_add},
      {"SET_UPDATE", &E::op_set_update},
      // subscripts
      {"BINARY_SUBSCR", &E::op_binary_subscr},
      {"BINARY_SLICE", &E::op_binary_slice},
      {"STORE_SUBSCR", &E::op_store_subscr},
      {"STORE_SLICE", &E::op_store_slice},
      {"DELETE_SUBSCR", &E::op_delete_subscr},
      // attributes
      {"LOAD_ATTR", &E::op_load_attr},
      {"LOAD_METHOD", &E::op_load_method},
      {"STORE_ATTR", &E::op_store_attr},
      {"DELETE_ATTR", &E::op_delete_attr},
      {"LOAD_SUPER_ATTR", &E::op_load_super_attr},
      // calls
      {"KW_NAMES", &E::op_kw_names},
      {"PRECALL", &E::op_precall},
      {"CALL", &E::op_call},
      {"CALL_KW", &E::op_call_kw},
      {"CALL_FUNCTION_EX", &E::op_call_function_ex},
      // iteration
      {"GET_ITER", &E::op_get_iter},
      {"FOR_ITER", &E::op_for_iter},
      {"END_FOR", &E::op_end_for},
      {"UNPACK_SEQUENCE", &E::op_unpack_sequence},
      // closures and functions
      {"MAKE_CELL", &E::op_make_cell},
      {"LOAD_DEREF", &E::op_load_deref},
      {"LOAD_CLOSURE", &E::op_load_closure},
      {"STORE_DEREF", &E::op_store_deref},
      {"DELETE_DEREF", &E::op_delete_deref},
      {"MAKE_FUNCTION", &E::op_make_function},
      {"SET_FUNCTION_ATTRIBUTE", &E::op_set_function_attribute},
      // generators run to their end where they are consumed at once (generators.cpp)
      {"RETURN_GENERATOR", &E::op_return_generator},
      {"YIELD_VALUE", &E::op_yield_value},
  };
  static const std::array<Handler, 256> table = [] {
    std::array<Handler, 256> t{};
    for (const Row& row : rows) {
      if (const int code = bytecode::opcode_by_name(row.opcode); code >= 0 && code < 256) {
        t[static_cast<std::size_t>(code)] = row.handler;
      }
    }
    return t;
  }();
  return table;
}

std::vector<std::string> simulated_opcode_names() {
  std::vector<std::string> out;
  const auto& table = OpcodeExecutor::handlers();
  for (int code = 0; code < 256; ++code) {
    if (table[static_cast<std::size_t>(code)] != nullptr) {
      out.emplace_back(bytecode::opcode_info(code).name);
    }
  }
  return out;
}

}  // namespace sot::translator
