// libFuzzer target for the bytecode layer: arbitrary bytes as code objects (co_code, exception
// table, location table) through decode and assemble, and arbitrary instruction lists through
// assemble. Errors are expected and fine; crashes, sanitizer reports and hangs are bugs. Built and
// run by `make fuzz` (and briefly by `make test`).
//
// Input: byte 0 picks the mode. Mode 0: two 16-bit lengths, then co_code, co_exceptiontable,
// co_linetable. Mode 1: 5-byte records (opcode, arg low, arg high, target, flags) forming an
// instruction list.
#include <Python.h>
#include <pybind11/embed.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/opcode_table.hpp"

namespace py = pybind11;
namespace sb = sot::bytecode;

namespace {

PyObject* g_template = nullptr;  // a strong reference, kept for the whole run

void fuzz_code(const std::uint8_t* data, std::size_t size) {
  if (size < 4) {
    return;
  }
  const std::size_t code_len = std::min<std::size_t>(size - 4, (data[0] | (data[1] << 8U)) & ~1U);
  const std::size_t table_len =
      std::min<std::size_t>(size - 4 - code_len, data[2] | (data[3] << 8U));
  const char* p = reinterpret_cast<const char*>(data + 4);
  const std::string code(p, code_len);
  const std::string table(p + code_len, table_len);
  const std::string lines(p + code_len + table_len, size - 4 - code_len - table_len);
  // Decoded straight from the bytes: CPython itself trusts co_code (creating a code object from
  // arbitrary bytes can corrupt its heap), so the bytes never become a code object; what is
  // assembled from them is well formed.
  try {
    sb::Bytecode b = sb::Bytecode::decode_parts(g_template, code, table, lines);
    (void)b.assemble();
  } catch (const sb::BytecodeError&) {
  } catch (const py::error_already_set&) {
  }
}

void fuzz_instructions(const std::uint8_t* data, std::size_t size) {
  const std::size_t n = size / 5;
  if (n == 0) {
    return;
  }
  std::vector<sb::Instruction> list;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* r = data + 5 * i;
    sb::Instruction ins;
    ins.id = static_cast<int>(i);
    const sb::OpcodeInfo& info = sb::opcode_info(r[0]);
    ins.opcode = info.valid() ? info.base : sb::opcode_by_name("NOP");
    ins.arg = r[1] | (r[2] << 8U);
    ins.target = static_cast<int>(r[3] % n);
    if ((r[4] & 1U) != 0) {
      ins.handler = sb::Handler{static_cast<int>((r[4] >> 1U) % n),
                                static_cast<int>((r[4] >> 4U) & 7U), (r[4] & 0x80U) != 0};
    }
    ins.position = {r[4] & 15, (r[4] & 15) + (r[3] & 1), r[1] & 63, (r[1] & 63) + (r[2] & 31)};
    list.push_back(ins);
  }
  try {
    sb::Bytecode b = sb::Bytecode::from_instructions(std::move(list), g_template);
    if (n > 2) {
      b.insert(n / 2, {b.at(0)});
      b.remove(0);
    }
    (void)b.assemble();
  } catch (const sb::BytecodeError&) {
  } catch (const py::error_already_set&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  py::initialize_interpreter();
  py::dict ns;
  py::exec(
      "def template(a, b=1, *args, **kw):\n"
      "    try:\n"
      "        return a + b\n"
      "    except Exception as e:\n"
      "        return str(e)\n",
      ns);
  g_template = py::object(ns["template"].attr("__code__")).release().ptr();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  if ((data[0] & 1U) == 0) {
    fuzz_code(data + 1, size - 1);
  } else {
    fuzz_instructions(data + 1, size - 1);
  }
  return 0;
}
