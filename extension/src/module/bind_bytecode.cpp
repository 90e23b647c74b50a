// `_sot.bytecode`: decode, edit, assemble and disassemble code objects.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/disassemble.hpp"
#include "bytecode/opcode_table.hpp"
#include "module/bindings.hpp"

namespace py = pybind11;

namespace sot::module {

namespace {

using bytecode::Bytecode;
using bytecode::Handler;
using bytecode::Instruction;
using bytecode::OpcodeInfo;
using bytecode::Position;

int opcode_from(const py::handle& op) {
  if (py::isinstance<py::str>(op)) {
    const std::string name = op.cast<std::string>();
    const int code = bytecode::opcode_by_name(name);
    if (code < 0) {
      throw py::value_error("unknown opcode name " + name);
    }
    return bytecode::opcode_info(code).base;
  }
  const int code = op.cast<int>();
  if (!bytecode::opcode_info(code).valid()) {
    throw py::value_error("unknown opcode " + std::to_string(code));
  }
  return bytecode::opcode_info(code).base;
}

py::object none_if_negative(int v) {
  return v < 0 ? py::none() : py::object(py::int_(v));
}

py::tuple positions_tuple(const Position& p) {
  return py::make_tuple(none_if_negative(p.line), none_if_negative(p.end_line),
                        none_if_negative(p.col), none_if_negative(p.end_col));
}

Position positions_from(const py::handle& value) {
  Position p;
  if (value.is_none()) {
    return p;
  }
  const auto t = py::reinterpret_borrow<py::sequence>(value);
  if (t.size() != 4) {
    throw py::value_error("positions are (line, end_line, col, end_col)");
  }
  int* fields[] = {&p.line, &p.end_line, &p.col, &p.end_col};
  for (std::size_t i = 0; i < 4; ++i) {
    *fields[i] = t[i].is_none() ? -1 : t[i].cast<int>();
  }
  return p;
}

std::vector<Instruction> instructions_from(const py::handle& value) {
  if (py::isinstance<Instruction>(value)) {
    return {value.cast<Instruction>()};
  }
  return value.cast<std::vector<Instruction>>();
}

void bind_instruction(py::module_& m) {
  py::class_<Instruction>(
      m, "Instruction",
      "One instruction: EXTENDED_ARG folded, caches implicit, targets as instruction ids.")
      .def(py::init([](const py::object& op, int arg, const py::object& target,
                       const py::object& positions, const py::object& handler) {
             Instruction ins;
             ins.opcode = opcode_from(op);
             ins.arg = arg;
             ins.target = target.is_none() ? -1 : target.cast<int>();
             ins.position = positions_from(positions);
             if (!handler.is_none()) {
               const auto t = handler.cast<py::tuple>();
               ins.handler = Handler{t[0].cast<int>(), t[1].cast<int>(), t[2].cast<bool>()};
             }
             return ins;
           }),
           py::arg("op"), py::arg("arg") = 0, py::arg("target") = py::none(),
           py::arg("positions") = py::none(), py::arg("handler") = py::none())
      .def_readonly("id", &Instruction::id)
      .def_property_readonly("opcode", [](const Instruction& i) { return i.opcode; })
      .def_property_readonly(
          "opname", [](const Instruction& i) { return bytecode::opcode_info(i.opcode).name; })
      .def_readonly("arg", &Instruction::arg)
      .def_property_readonly("target",
                             [](const Instruction& i) { return none_if_negative(i.target); })
      .def_property_readonly("handler",
                             [](const Instruction& i) -> py::object {
                               if (!i.handler) {
                                 return py::none();
                               }
                               return py::make_tuple(i.handler->target, i.handler->depth,
                                                     i.handler->lasti);
                             })
      .def_property_readonly("positions",
                             [](const Instruction& i) { return positions_tuple(i.position); })
      .def_property_readonly(
          "offset", [](const Instruction& i) { return none_if_negative(i.original_offset); })
      .def_readonly("is_new", &Instruction::is_new)
      .def("__repr__", [](const Instruction& i) {
        std::string s =
            "<Instruction #" + std::to_string(i.id) + " " + bytecode::opcode_info(i.opcode).name;
        if (bytecode::opcode_info(i.opcode).has_arg()) {
          s += " " + std::to_string(i.arg);
        }
        if (bytecode::opcode_info(i.opcode).is_jump()) {
          s += " -> #" + std::to_string(i.target);
        }
        return s + ">";
      });
}

void bind_bytecode_class(py::module_& m) {
  py::class_<Bytecode>(m, "Bytecode", "A code object decoded into an editable instruction list.")
      .def("__len__", &Bytecode::size)
      .def("__getitem__",
           [](const Bytecode& b, long index) {
             const long n = static_cast<long>(b.size());
             if (index < 0) {
               index += n;
             }
             if (index < 0 || index >= n) {
               throw py::index_error("instruction index out of range");
             }
             return b.at(static_cast<std::size_t>(index));
           })
      // Copies: a reference into the vector would dangle after the next edit.
      .def_property_readonly(
          "instructions",
          [](const Bytecode& b) { return std::vector<Instruction>(b.instructions()); })
      .def_property_readonly("code", [](const Bytecode& b) { return b.template_code(); })
      .def_property_readonly("consts", [](const Bytecode& b) { return py::tuple(b.consts()); })
      .def_property_readonly("names", [](const Bytecode& b) { return py::tuple(b.names()); })
      .def_property_readonly("localsplus_names",
                             [](const Bytecode& b) { return py::tuple(b.localsplus_names()); })
      .def_property_readonly("localsplus_kinds",
                             [](const Bytecode& b) { return py::bytes(b.localsplus_kinds()); })
      .def("index_of", &Bytecode::index_of, py::arg("id"))
      .def(
          "insert",
          [](Bytecode& b, std::size_t index, const py::object& added, bool retarget) {
            return b.insert(index, instructions_from(added), bytecode::InsertOptions{retarget});
          },
          py::arg("index"), py::arg("instructions"), py::arg("retarget") = false,
          "Insert before `index`; returns the new ids. A target of -(k+2) refers to the k-th "
          "inserted one.")
      .def("remove", &Bytecode::remove, py::arg("index"))
      .def("replace", &Bytecode::replace, py::arg("index"), py::arg("instruction"))
      .def("add_const", &Bytecode::add_const, py::arg("value"))
      .def("add_name", &Bytecode::add_name, py::arg("name"))
      .def("add_local", &Bytecode::add_local, py::arg("name"))
      .def(
          "assemble",
          [](const Bytecode& b, std::optional<std::string> name,
             std::optional<std::string> qualname, std::optional<std::string> filename,
             std::optional<int> first_line, std::optional<int> flags, std::optional<int> argcount,
             std::optional<int> posonlyargcount, std::optional<int> kwonlyargcount) {
            return b.assemble(Bytecode::CodeOverrides{std::move(name), std::move(qualname),
                                                      std::move(filename), first_line, flags,
                                                      argcount, posonlyargcount, kwonlyargcount});
          },
          py::kw_only(), py::arg("name") = py::none(), py::arg("qualname") = py::none(),
          py::arg("filename") = py::none(), py::arg("first_line") = py::none(),
          py::arg("flags") = py::none(), py::arg("argcount") = py::none(),
          py::arg("posonlyargcount") = py::none(), py::arg("kwonlyargcount") = py::none(),
          "Assemble a new code object; keyword arguments replace the template's name, qualname, "
          "filename, "
          "first line, flags and argument counts.")
      .def("dis", [](const Bytecode& b) { return bytecode::disassemble_text(b); })
      .def(
          "structured", [](const Bytecode& b) { return bytecode::disassemble_rows(b); },
          "Disassembly rows of this (possibly edited) Bytecode: inserted and replaced instructions "
          "have is_new.");
}

}  // namespace

void bind_bytecode(py::module_& parent) {
  py::module_ m =
      parent.def_submodule("bytecode", "Decode, edit, assemble and disassemble code objects.");
  py::register_exception<bytecode::BytecodeError>(m, "BytecodeError", PyExc_ValueError);

  bind_instruction(m);

  bind_bytecode_class(m);

  m.def(
      "decode", [](const py::object& code) { return Bytecode::decode(code.ptr()); },
      py::arg("code"), "Decode a code object into a Bytecode.");
  m.def(
      "assemble",
      [](const py::object& instructions, const py::object& template_code) -> py::object {
        if (py::isinstance<Bytecode>(instructions)) {
          const Bytecode& b = instructions.cast<const Bytecode&>();
          if (template_code.is_none()) {
            return b.assemble();
          }
          return Bytecode::from_instructions(b.instructions(), template_code.ptr()).assemble();
        }
        if (template_code.is_none()) {
          throw py::value_error("assemble(list, template_code): a template code object is needed");
        }
        return Bytecode::from_instructions(instructions.cast<std::vector<Instruction>>(),
                                           template_code.ptr())
            .assemble();
      },
      py::arg("instructions"), py::arg("template_code") = py::none(),
      "Assemble a Bytecode, or a list of instructions with a template code object, into a new code "
      "object.");
  m.def(
      "roundtrip", [](const py::object& code) { return bytecode::roundtrip(code.ptr()); },
      py::arg("code"), "Decode then assemble.");
  m.def(
      "dis",
      [](const py::object& code) {
        return bytecode::disassemble_text(Bytecode::decode(code.ptr()));
      },
      py::arg("code"), "Disassembly text in the format of dis.dis (this code object only).");
  m.def(
      "structured",
      [](const py::object& code) {
        return bytecode::disassemble_rows(Bytecode::decode(code.ptr()));
      },
      py::arg("code"), "Disassembly rows (dicts) for the notebook's side-by-side view.");
  m.def(
      "opcode_table",
      []() {
        py::list rows;
        for (int code = 0; code < 256; ++code) {
          const OpcodeInfo& info = bytecode::opcode_info(code);
          if (info.valid()) {
            rows.append(py::make_tuple(info.code, info.name, info.base,
                                       static_cast<int>(info.arg_kind), info.cache_entries,
                                       info.is_jump(), !info.falls_through()));
          }
        }
        return rows;
      },
      "(opcode, name, base, arg_kind, cache_entries, is_jump, no_fallthrough) for every opcode.");
  m.def(
      "stack_effect",
      [](int opcode, int arg, bool jump) -> py::object {
        int effect = 0;
        if (!bytecode::stack_effect(opcode, arg, jump, &effect)) {
          return py::none();
        }
        return py::int_(effect);
      },
      py::arg("opcode"), py::arg("arg"), py::arg("jump"));
  m.attr("TABLE_PYTHON") = bytecode::opcode_table_python();
}

}  // namespace sot::module
