#include "bytecode/bytecode.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "bytecode/exception_table.hpp"
#include "bytecode/location_table.hpp"
#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"

namespace py = pybind11;

namespace sot::bytecode {

namespace {

std::string bytes_of(PyObject* bytes_object) {
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(bytes_object, &data, &size) != 0) {
    throw py::error_already_set();
  }
  return std::string(data, static_cast<std::size_t>(size));
}

// Target code unit of a jump at [start, end) with argument `arg`, or -1 for an argument kind that
// is no jump.
long jump_target_unit(ArgKind kind, int end, int arg) {
  switch (kind) {
    case ArgKind::kJumpForward:
      return static_cast<long>(end) + arg;
    case ArgKind::kJumpBackward:
      return static_cast<long>(end) - arg;
    case ArgKind::kJumpAbsolute:
      return arg;
    default:
      return -1;
  }
}

bool uses_localsplus(ArgKind kind) {
  return kind == ArgKind::kLocal || kind == ArgKind::kFree || kind == ArgKind::kLocalPair;
}

}  // namespace

Bytecode::Bytecode(py::object code) : code_(std::move(code)) {
  auto* co = reinterpret_cast<PyCodeObject*>(code_.ptr());
  consts_ = py::list(py::reinterpret_borrow<py::tuple>(co->co_consts));
  names_ = py::list(py::reinterpret_borrow<py::tuple>(co->co_names));
  localsplus_names_ = py::list(py::reinterpret_borrow<py::tuple>(co->co_localsplusnames));
  localsplus_kinds_ = bytes_of(co->co_localspluskinds);
}

Bytecode Bytecode::decode(PyObject* code) {
  if (code == nullptr || !PyCode_Check(code)) {
    throw BytecodeError("decode expects a code object");
  }
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  const py::object raw = py::reinterpret_steal<py::object>(PyCode_GetCode(co));  // new reference
  if (!raw) {
    throw py::error_already_set();
  }
  return decode_parts(code, bytes_of(raw.ptr()), bytes_of(co->co_exceptiontable),
                      bytes_of(co->co_linetable));
}

Bytecode Bytecode::decode_parts(PyObject* template_code, const std::string& bytes,
                                const std::string& exception_table, const std::string& linetable) {
  if (template_code == nullptr || !PyCode_Check(template_code)) {
    throw BytecodeError("decode expects a code object");
  }
  Bytecode bc(py::reinterpret_borrow<py::object>(template_code));
  auto* co = reinterpret_cast<PyCodeObject*>(template_code);
  if (bytes.size() % 2 != 0) {
    throw BytecodeError("co_code has an odd number of bytes");
  }
  const int n_units = static_cast<int>(bytes.size() / 2);
  const int extended_arg = extended_arg_opcode();

  std::vector<int> index_at_unit(static_cast<std::size_t>(n_units), -1);
  std::vector<int> starts;
  std::vector<int> ends;
  std::vector<int> opcode_units;
  unsigned long ext = 0;
  int start = -1;
  for (int u = 0; u < n_units;) {
    const int op = static_cast<unsigned char>(bytes[2 * static_cast<std::size_t>(u)]);
    const int arg = static_cast<unsigned char>(bytes[2 * static_cast<std::size_t>(u) + 1]);
    const OpcodeInfo& info = opcode_info(op);
    if (!info.valid()) {
      throw BytecodeError("unknown opcode " + std::to_string(op) + " at offset " +
                          std::to_string(2 * u));
    }
    if (start < 0) {
      start = u;
    }
    if (info.base == extended_arg) {
      ext = (ext | static_cast<unsigned long>(arg)) << 8U;
      if (ext > static_cast<unsigned long>(INT_MAX)) {
        throw BytecodeError("argument too large at offset " + std::to_string(2 * u));
      }
      ++u;
      continue;
    }
    const OpcodeInfo& base = opcode_info(info.base);
    Instruction ins;
    ins.id = static_cast<int>(bc.instructions_.size());
    ins.opcode = base.code;
    ins.arg = static_cast<int>(ext | static_cast<unsigned long>(arg));
    ins.original_offset = 2 * start;
    const int end = u + 1 + base.cache_entries;
    if (end > n_units) {
      throw BytecodeError("inline caches of " + std::string(base.name) +
                          " run past the end of the code");
    }
    index_at_unit[static_cast<std::size_t>(start)] = ins.id;
    starts.push_back(start);
    ends.push_back(end);
    opcode_units.push_back(u);
    bc.instructions_.push_back(ins);
    u = end;
    ext = 0;
    start = -1;
  }
  if (start >= 0) {
    throw BytecodeError("code ends inside an EXTENDED_ARG prefix");
  }

  auto instruction_at = [&](long unit, const char* what) {
    if (unit < 0 || unit >= n_units || index_at_unit[static_cast<std::size_t>(unit)] < 0) {
      throw BytecodeError(std::string(what) + " to offset " + std::to_string(2 * unit) +
                          ", which is not the start of an instruction");
    }
    return index_at_unit[static_cast<std::size_t>(unit)];
  };

  // Jump targets become instruction references.
  for (std::size_t i = 0; i < bc.instructions_.size(); ++i) {
    Instruction& ins = bc.instructions_[i];
    const OpcodeInfo& info = opcode_info(ins.opcode);
    if (info.is_jump()) {
      ins.target = instruction_at(jump_target_unit(info.arg_kind, ends[i], ins.arg), "jump");
    }
  }

  // Positions: the location-table entry of each instruction's opcode unit.
  if (!linetable.empty()) {
    const std::vector<Position> unit_positions =
        decode_location_table(linetable, co->co_firstlineno, n_units);
    for (std::size_t i = 0; i < bc.instructions_.size(); ++i) {
      bc.instructions_[i].position = unit_positions[static_cast<std::size_t>(opcode_units[i])];
    }
  }

  // Exception-table entries become per-instruction handlers.
  for (const ExceptionTableEntry& e : decode_exception_table(exception_table)) {
    const int first = instruction_at(e.start, "exception table entry");
    if (e.end > n_units ||
        (e.end < n_units && index_at_unit[static_cast<std::size_t>(e.end)] < 0) ||
        e.end <= e.start) {
      throw BytecodeError("exception table entry ends inside an instruction");
    }
    const Handler handler{instruction_at(e.target, "exception handler"), e.depth, e.lasti};
    for (std::size_t i = static_cast<std::size_t>(first);
         i < bc.instructions_.size() && starts[i] < e.end; ++i) {
      if (bc.instructions_[i].handler) {
        throw BytecodeError("exception table entries overlap at offset " +
                            std::to_string(2 * starts[i]));
      }
      bc.instructions_[i].handler = handler;
    }
  }
  bc.next_id_ = static_cast<int>(bc.instructions_.size());
  return bc;
}

Bytecode Bytecode::from_instructions(std::vector<Instruction> instructions,
                                     PyObject* template_code) {
  if (template_code == nullptr || !PyCode_Check(template_code)) {
    throw BytecodeError("assemble expects a template code object");
  }
  Bytecode bc(py::reinterpret_borrow<py::object>(template_code));
  bc.instructions_ = std::move(instructions);
  int max_id = -1;
  for (const Instruction& ins : bc.instructions_) {
    if (!opcode_info(ins.opcode).valid()) {
      throw BytecodeError("unknown opcode " + std::to_string(ins.opcode));
    }
    max_id = std::max(max_id, ins.id);
  }
  bc.next_id_ = max_id + 1;
  bc.check_targets();
  return bc;
}

std::size_t Bytecode::index_of(int id) const {
  // Ids are small dense integers (decode numbers instructions, edits take the next free ids), so
  // the index is a plain vector.
  constexpr int kMaxId = 1 << 22;
  if (!index_valid_) {
    int max_id = -1;
    for (const Instruction& ins : instructions_) {
      if (ins.id < 0 || ins.id >= kMaxId) {
        throw BytecodeError("instruction id " + std::to_string(ins.id) + " is outside 0.." +
                            std::to_string(kMaxId - 1));
      }
      max_id = std::max(max_id, ins.id);
    }
    index_by_id_.assign(static_cast<std::size_t>(max_id) + 1, -1);
    for (std::size_t i = 0; i < instructions_.size(); ++i) {
      int& slot = index_by_id_[static_cast<std::size_t>(instructions_[i].id)];
      if (slot >= 0) {
        throw BytecodeError("two instructions share the id " + std::to_string(instructions_[i].id));
      }
      slot = static_cast<int>(i);
    }
    index_valid_ = true;
  }
  if (id < 0 || static_cast<std::size_t>(id) >= index_by_id_.size() ||
      index_by_id_[static_cast<std::size_t>(id)] < 0) {
    throw BytecodeError("no instruction has the id " + std::to_string(id));
  }
  return static_cast<std::size_t>(index_by_id_[static_cast<std::size_t>(id)]);
}

void Bytecode::check_targets() const {
  for (const Instruction& ins : instructions_) {
    if (opcode_info(ins.opcode).is_jump()) {
      index_of(ins.target);
    }
    if (ins.handler) {
      index_of(ins.handler->target);
    }
  }
}

std::vector<int> Bytecode::insert(std::size_t index, std::vector<Instruction> added,
                                  InsertOptions options) {
  if (index > instructions_.size()) {
    throw BytecodeError("insert position " + std::to_string(index) + " is past the end");
  }
  if (added.empty()) {
    return {};
  }
  std::vector<int> ids;
  ids.reserve(added.size());
  for (std::size_t k = 0; k < added.size(); ++k) {
    ids.push_back(fresh_id());
  }
  const Instruction* next = index < instructions_.size() ? &instructions_[index] : nullptr;
  for (std::size_t k = 0; k < added.size(); ++k) {
    Instruction& ins = added[k];
    ins.id = ids[k];
    ins.is_new = true;
    ins.original_offset = -1;
    if (!opcode_info(ins.opcode).valid()) {
      throw BytecodeError("unknown opcode " + std::to_string(ins.opcode));
    }
    if (ins.target <= -2) {  // a reference to another instruction of `added`
      const std::size_t local = static_cast<std::size_t>(-ins.target - 2);
      if (local >= added.size()) {
        throw BytecodeError("inserted jump refers to inserted instruction " +
                            std::to_string(local) + " of " + std::to_string(added.size()));
      }
      ins.target = ids[local];
    }
    if (next != nullptr) {
      if (!ins.handler) {
        ins.handler = next->handler;
      }
      if (ins.position.line < 0 && ins.position.col < 0) {
        ins.position = next->position;
      }
    }
  }
  if (options.retarget && next != nullptr) {
    const int old_id = next->id;
    for (Instruction& ins : instructions_) {
      if (ins.target == old_id && opcode_info(ins.opcode).is_jump()) {
        ins.target = ids.front();
      }
      if (ins.handler && ins.handler->target == old_id) {
        ins.handler->target = ids.front();
      }
    }
    for (Instruction& ins : added) {
      if (ins.handler && ins.handler->target == old_id) {
        ins.handler->target = ids.front();
      }
    }
  }
  instructions_.insert(instructions_.begin() + static_cast<std::ptrdiff_t>(index),
                       std::make_move_iterator(added.begin()),
                       std::make_move_iterator(added.end()));
  invalidate_index();
  try {
    check_targets();
  } catch (const BytecodeError&) {
    instructions_.erase(instructions_.begin() + static_cast<std::ptrdiff_t>(index),
                        instructions_.begin() + static_cast<std::ptrdiff_t>(index + ids.size()));
    invalidate_index();
    throw;
  }
  return ids;
}

void Bytecode::remove(std::size_t index) {
  if (index >= instructions_.size()) {
    throw BytecodeError("remove position " + std::to_string(index) + " is past the end");
  }
  const int old_id = instructions_[index].id;
  const bool targeted =
      std::any_of(instructions_.begin(), instructions_.end(), [&](const Instruction& ins) {
        return (ins.target == old_id && opcode_info(ins.opcode).is_jump()) ||
               (ins.handler && ins.handler->target == old_id);
      });
  if (targeted && index + 1 >= instructions_.size()) {
    throw BytecodeError("cannot remove the last instruction while something jumps to it");
  }
  const int new_id = targeted ? instructions_[index + 1].id : -1;
  instructions_.erase(instructions_.begin() + static_cast<std::ptrdiff_t>(index));
  if (targeted) {
    for (Instruction& ins : instructions_) {
      if (ins.target == old_id && opcode_info(ins.opcode).is_jump()) {
        ins.target = new_id;
      }
      if (ins.handler && ins.handler->target == old_id) {
        ins.handler->target = new_id;
      }
    }
  }
  invalidate_index();
}

void Bytecode::replace(std::size_t index, Instruction instruction) {
  if (index >= instructions_.size()) {
    throw BytecodeError("replace position " + std::to_string(index) + " is past the end");
  }
  if (!opcode_info(instruction.opcode).valid()) {
    throw BytecodeError("unknown opcode " + std::to_string(instruction.opcode));
  }
  Instruction old = instructions_[index];
  instruction.id = old.id;
  instruction.is_new = true;
  instruction.original_offset = old.original_offset;
  instructions_[index] = instruction;
  try {
    check_targets();
  } catch (const BytecodeError&) {
    instructions_[index] = old;
    throw;
  }
}

int Bytecode::add_const(py::handle value) {
  if (const_index_.size() !=
      consts_.size()) {  // first use, or consts added behind the index's back
    const_index_.clear();
    for (std::size_t i = 0; i < consts_.size(); ++i) {
      const_index_.emplace(PyList_GET_ITEM(consts_.ptr(), static_cast<Py_ssize_t>(i)),
                           static_cast<int>(i));
    }
  }
  const auto it = const_index_.find(value.ptr());
  if (it != const_index_.end()) {
    return it->second;
  }
  consts_.append(value);
  const int index = static_cast<int>(consts_.size() - 1);
  const_index_.emplace(value.ptr(), index);
  return index;
}

int Bytecode::add_name(const std::string& name) {
  const py::str wanted(name);
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (py::object(names_[i]).equal(wanted)) {
      return static_cast<int>(i);
    }
  }
  names_.append(wanted);
  return static_cast<int>(names_.size() - 1);
}

int Bytecode::add_local(const std::string& name) {
  const py::str wanted(name);
  std::size_t first_non_local = localsplus_kinds_.size();
  for (std::size_t i = 0; i < localsplus_kinds_.size(); ++i) {
    const auto kind = static_cast<unsigned char>(localsplus_kinds_[i]);
    if ((kind & version::kFastHidden) != 0) {
      throw BytecodeError("cannot add a local to code with hidden (inlined comprehension) locals");
    }
    if ((kind & version::kFastLocal) != 0 && py::object(localsplus_names_[i]).equal(wanted)) {
      return static_cast<int>(i);
    }
    if ((kind & version::kFastLocal) == 0 && first_non_local == localsplus_kinds_.size()) {
      first_non_local = i;
    }
  }
  const int position = static_cast<int>(first_non_local);
  // Cells and frees after the new slot move up by one.
  for (Instruction& ins : instructions_) {
    const ArgKind kind = opcode_info(ins.opcode).arg_kind;
    if (!uses_localsplus(kind)) {
      continue;
    }
    if (kind == ArgKind::kLocalPair) {
      int high = ins.arg >> 4;
      int low = ins.arg & 15;
      high += high >= position ? 1 : 0;
      low += low >= position ? 1 : 0;
      if (high > 15 || low > 15) {
        throw BytecodeError("adding a local would overflow a packed local pair");
      }
      ins.arg = (high << 4) | low;
    } else if (ins.arg >= position) {
      ins.arg += 1;
    }
  }
  localsplus_names_.insert(position, wanted);
  localsplus_kinds_.insert(first_non_local, 1, static_cast<char>(version::kFastLocal));
  locals_changed_ = true;
  return position;
}

void Bytecode::set_localsplus(py::list names, std::string kinds) {
  if (names.size() != kinds.size()) {
    throw BytecodeError("localsplus names and kinds differ in length");
  }
  localsplus_names_ = std::move(names);
  localsplus_kinds_ = std::move(kinds);
  locals_changed_ = true;
}

pybind11::object roundtrip(PyObject* code) {
  return Bytecode::decode(code).assemble();
}

}  // namespace sot::bytecode
