#include "bytecode/emitter.hpp"

#include <string>

#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"
#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::bytecode {

int opcode_named(const char* name) {
  const int code = opcode_by_name(name);
  if (code < 0) {
    throw EmitError(std::string("this Python has no opcode ") + name);
  }
  return code;
}

namespace {

int jump_opcode(const char* name) {
  const int code = opcode_by_name(name);
  if (code >= 0) {
    return code;
  }
  const std::string n = name;
  if (n.rfind("POP_JUMP_IF_", 0) == 0) {
    return opcode_named(("POP_JUMP_FORWARD_IF_" + n.substr(12)).c_str());
  }
  return opcode_named(name);
}

}  // namespace

bool strip_call_null(const Instruction& ins, Instruction* plain, int* null_position) {
  const std::string name = opcode_info(ins.opcode).name;
  const bool null_bit = (ins.arg & 1) != 0;
  *plain = ins;
  if ((name == "LOAD_GLOBAL" && null_bit) ||
      (name == "LOAD_ATTR" && version::kLoadAttrNameShift == 1 && null_bit)) {
    plain->arg = ins.arg & ~1;
    *null_position = version::kNullBeforeCallable ? 0 : 1;
    return true;
  }
  if (name == "LOAD_METHOD") {
    plain->opcode = opcode_named("LOAD_ATTR");
    *null_position = 0;
    return true;
  }
  return false;
}

bool call_null_above_callable() {
  return !version::kNullBeforeCallable;
}

bool takes_exact_bool(const Instruction& ins) {
  if constexpr (!version::kBoolConsumersNeedExactBool) {
    return false;
  }
  const std::string name = opcode_info(ins.opcode).name;
  return name == "POP_JUMP_IF_TRUE" || name == "POP_JUMP_IF_FALSE" || name == "UNARY_NOT";
}

void Emitter::emit(int op, int arg) {
  Instruction ins;
  ins.opcode = op;
  ins.arg = arg;
  ins.position = pos;
  out.push_back(ins);
  emitted(out.back());
}

int Emitter::new_label() {
  labels_.push_back(-1);
  return static_cast<int>(labels_.size() - 1);
}

void Emitter::place(int label) {
  labels_[static_cast<std::size_t>(label)] = static_cast<long>(out.size());
}

void Emitter::emit_jump_op(const char* name, int label) {
  jumped();
  Instruction ins;
  ins.opcode = jump_opcode(name);
  ins.position = pos;
  jumps_.emplace_back(out.size(), label);
  out.push_back(ins);
}

void Emitter::emit_jump(const Instruction& original, int label) {
  jumped();
  Instruction ins;
  ins.opcode = original.opcode;
  ins.arg = original.arg;
  ins.position = original.position;
  jumps_.emplace_back(out.size(), label);
  out.push_back(ins);
}

void Emitter::emit_jump_to_id(const char* name, int id) {
  Instruction ins;
  ins.opcode = opcode_named(name);
  ins.position = pos;
  ins.target = id;
  out.push_back(ins);
}

void Emitter::cover(std::size_t first, int label, int depth, bool lasti) {
  covers_.push_back(Cover{first, out.size(), label, depth, lasti});
}

long Emitter::label_index(int label) const {
  const long at = labels_[static_cast<std::size_t>(label)];
  if (at < 0) {
    throw EmitError("a label was never placed");
  }
  return at;
}

void Emitter::finish_into(Bytecode& target, std::size_t at) {
  for (const auto& [index, label] : jumps_) {
    out[index].target = -static_cast<int>(label_index(label) + 2);
  }
  const std::size_t base = at == SIZE_MAX ? target.size() : at;
  const std::size_t count = out.size();
  const std::vector<int> ids = target.insert(base, std::move(out));
  for (std::size_t k = 0; k < count; ++k) {
    Instruction ins = target.at(base + k);
    if (ins.handler) {
      ins.handler.reset();
      target.replace(base + k, ins);
    }
  }
  for (const Cover& c : covers_) {
    const int handler = ids.at(static_cast<std::size_t>(label_index(c.label)));
    for (std::size_t k = c.first; k < c.end; ++k) {
      Instruction ins = target.at(base + k);
      ins.handler = Handler{handler, c.depth, c.lasti};
      target.replace(base + k, ins);
    }
  }
}

void Emitter::load_const(const py::object& value) {
  if (PyObject_Hash(value.ptr()) == -1) {
    PyErr_Clear();
    if (PySlice_Check(value.ptr())) {
      const py::object same_slice =
          loaded_module("itertools").attr("repeat")(value).attr("__next__");
      call_constant(
          same_slice, [] {}, 0);
      return;
    }
    if (PyTuple_CheckExact(value.ptr())) {
      for (const py::handle item : value) {
        load_const(py::reinterpret_borrow<py::object>(item));
      }
      emit("BUILD_TUPLE", static_cast<int>(PyTuple_GET_SIZE(value.ptr())));
      return;
    }
  }
  emit("LOAD_CONST", bc.add_const(value));
}

void Emitter::load_attr(const std::string& name) {
  emit("LOAD_ATTR", bc.add_name(name) << version::kLoadAttrNameShift);
}

void Emitter::load_global(const std::string& name) {
  emit("LOAD_GLOBAL", bc.add_name(name) << version::kLoadGlobalNameShift);
}

std::size_t Emitter::emit_for_iter_exit() {
  if constexpr (version::kForIterExhaustSkip >= 1) {
    emit("END_FOR");
  }
  if constexpr (version::kForIterExhaustSkip >= 2) {
    emit("POP_TOP");
  }
  return version::kForIterExhaustSkip;
}

void Emitter::load_cell(int slot) {
  emit(version::kMakeFunctionHasFlags ? "LOAD_CLOSURE" : "LOAD_FAST", slot);
}

void Emitter::rotate_down(std::size_t n) {
  for (std::size_t k = n + 1; k >= 2; --k) {
    emit("SWAP", static_cast<int>(k));
  }
}

void Emitter::push_callable(const std::function<void()>& load_callable) {
  if constexpr (version::kNullBeforeCallable) {
    emit("PUSH_NULL");
    load_callable();
  } else {
    load_callable();
    emit("PUSH_NULL");
  }
}

void Emitter::call(int nargs) {
  if constexpr (version::kHasPrecall) {
    emit("PRECALL", nargs);
  }
  emit("CALL", nargs);
}

void Emitter::callable_over_argument() {
  if constexpr (version::kNullBeforeCallable) {
    emit("PUSH_NULL");  // [arg, fn, NULL] -> [NULL, fn, arg]
    emit("SWAP", 3);
  } else {
    emit("SWAP", 2);  // [fn, arg] -> [fn, NULL, arg]
    emit("PUSH_NULL");
    emit("SWAP", 2);
  }
}

void Emitter::call_constant(const py::object& callable, const std::function<void()>& push_args,
                            int nargs) {
  push_callable([&] { load_const(callable); });
  push_args();
  call(nargs);
}

void Emitter::call_attribute(const std::string& name, const py::object& arg) {
  load_attr(name);
  if constexpr (version::kNullBeforeCallable) {
    emit("PUSH_NULL");
    emit("SWAP", 2);
  } else {
    emit("PUSH_NULL");
  }
  const int nargs = arg ? 1 : 0;
  if (arg) {
    load_const(arg);
  }
  call(nargs);
}

void Emitter::call_method_keep(const char* name, const py::object& arg) {
  emit("COPY", 1);
  call_attribute(name, arg);
  emit("POP_TOP");
}

void Emitter::call_ex_discard() {
  callable_over_argument();
  emit("CALL_FUNCTION_EX", 0);
  emit("POP_TOP");
}

void Emitter::make_function(const py::object& code, int parts, bool closure,
                            const std::function<void(int bit)>& load_part,
                            const std::function<void()>& load_closure) {
  constexpr int kParts = 3;
  if constexpr (version::kMakeFunctionHasFlags) {
    int flags = 0;
    for (int bit = 0; bit < kParts; ++bit) {
      if ((parts & (1 << bit)) != 0) {
        load_part(bit);
        flags |= 1 << bit;
      }
    }
    if (closure) {
      load_closure();
      flags |= version::kMakeFunctionClosure;
    }
    load_const(code);
    emit("MAKE_FUNCTION", flags);
  } else {
    load_const(code);
    emit("MAKE_FUNCTION");
    for (int bit = 0; bit < kParts; ++bit) {
      if ((parts & (1 << bit)) != 0) {
        load_part(bit);
        emit("SWAP", 2);
        emit("SET_FUNCTION_ATTRIBUTE", 1 << bit);
      }
    }
    if (closure) {
      load_closure();
      emit("SWAP", 2);
      emit("SET_FUNCTION_ATTRIBUTE", version::kMakeFunctionClosure);
    }
  }
}

}  // namespace sot::bytecode
