#include "capture/strict_raise.hpp"

#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/opcode_table.hpp"

namespace py = pybind11;

namespace sot::capture {

py::object raising_code(PyCodeObject* original, const std::string& reason) {
  namespace sb = sot::bytecode;
  const sb::Bytecode decoded = sb::Bytecode::decode(reinterpret_cast<PyObject*>(original));
  const int resume = sb::opcode_by_name("RESUME");
  std::vector<sb::Instruction> kept;
  for (const sb::Instruction& ins : decoded.instructions()) {
    kept.push_back(ins);
    kept.back().handler.reset();  // the handlers' code is not kept; the error propagates as raised
    if (ins.opcode == resume) {
      break;
    }
  }
  const sb::Position where = kept.back().position;
  sb::Bytecode b =
      sb::Bytecode::from_instructions(std::move(kept), reinterpret_cast<PyObject*>(original));
  const py::object error =
      py::module_::import("builtins").attr("RuntimeError")("sot (SOT_STRICT=1): " + reason);
  sb::Instruction load;
  load.opcode = sb::opcode_by_name("LOAD_CONST");
  load.arg = b.add_const(error);
  load.position = where;
  sb::Instruction raise;
  raise.opcode = sb::opcode_by_name("RAISE_VARARGS");
  raise.arg = 1;
  raise.position = where;
  b.insert(b.size(), {load, raise});
  return b.assemble();
}

}  // namespace sot::capture
