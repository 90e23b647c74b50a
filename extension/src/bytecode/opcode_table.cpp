#include "bytecode/opcode_table.hpp"

#include <Python.h>

#include <array>
#include <string_view>
#include <unordered_map>

namespace sot::bytecode {

namespace {

const OpcodeInfo kRows[] = {
#include "opcode_table.inc"  // generated for this interpreter
};

struct Tables {
  std::array<OpcodeInfo, 256> by_code{};
  std::unordered_map<std::string_view, int> by_name;
  int extended_arg = -1;

  Tables() {
    for (const OpcodeInfo& row : kRows) {
      by_code.at(static_cast<std::size_t>(row.code)) = row;
      by_name.emplace(row.name, row.code);
    }
    extended_arg = by_name.at("EXTENDED_ARG");
  }
};

// Built when the library loads (kRows is constant-initialised, so it is ready before this runs).
const Tables kTables;

const Tables& tables() {
  return kTables;
}

}  // namespace

namespace detail {
const OpcodeInfo kInvalidOpcode{};
const OpcodeInfo* const kOpcodeByCode = kTables.by_code.data();
}  // namespace detail

int opcode_by_name(std::string_view name) {
  const auto& map = tables().by_name;
  const auto it = map.find(name);
  return it == map.end() ? -1 : it->second;
}

const char* opcode_table_python() {
  return SOT_OPCODE_TABLE_PYTHON;
}

int extended_arg_opcode() {
  return tables().extended_arg;
}

bool stack_effect(int opcode, int oparg, bool jump, int* effect) {
  const int value = PyCompile_OpcodeStackEffectWithJump(opcode, oparg, jump ? 1 : 0);
  // The interpreter answers PY_INVALID_STACK_EFFECT (INT_MAX) for opcodes it does not know.
  if (value == PY_INVALID_STACK_EFFECT) {
    return false;
  }
  *effect = value;
  return true;
}

}  // namespace sot::bytecode
