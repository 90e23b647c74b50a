// A code object decoded into an editable instruction list, and back.
//
// Ownership: a Bytecode holds a strong reference to the code object it was decoded from (its
// template for the fields it does not model: flags, argument counts, names, filename, qualname,
// first line), and strong references to its constants and names (pybind11 objects). Nothing is
// borrowed past a call.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "bytecode/exception_table.hpp"
#include "bytecode/instruction.hpp"

namespace sot::bytecode {

// Malformed input (bytes that are not valid bytecode, a jump to nowhere) or an impossible edit.
class BytecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Options for Bytecode::insert.
struct InsertOptions {
  // Jumps and handlers that targeted the instruction at the insertion point now target the first
  // inserted one.
  bool retarget = false;
};

class Bytecode {
 public:
  // Move-only: the constant and name lists are Python lists a copy would share.
  Bytecode(Bytecode&&) = default;
  Bytecode& operator=(Bytecode&&) = default;
  Bytecode(const Bytecode&) = delete;
  Bytecode& operator=(const Bytecode&) = delete;
  ~Bytecode() = default;

  // Decodes `code` (a code object; borrowed for the call). Throws BytecodeError on malformed
  // bytecode.
  static Bytecode decode(PyObject* code);
  // Decodes raw co_code, exception-table and location-table bytes, with constants, names,
  // localsplus and first line from `template_code`. Nothing about the bytes is trusted (the fuzz
  // target feeds arbitrary ones).
  static Bytecode decode_parts(PyObject* template_code, const std::string& code,
                               const std::string& exception_table,
                               const std::string& location_table);
  // Builds a Bytecode from an instruction list and a template code object: constants, names and
  // localsplus come from the template; instruction ids must be unique and targets must refer to ids
  // in the list.
  static Bytecode from_instructions(std::vector<Instruction> instructions, PyObject* template_code);

  // Assembles a new code object (a new reference, never null; throws on error).
  pybind11::object assemble() const { return assemble(CodeOverrides{}); }
  // Same, with fields of the template replaced (for resume functions and other generated code).
  struct CodeOverrides {
    std::optional<std::string> name;
    std::optional<std::string> qualname;
    std::optional<std::string> filename;
    std::optional<int> first_line;
    std::optional<int> flags;
    std::optional<int> argcount;
    std::optional<int> posonlyargcount;
    std::optional<int> kwonlyargcount;
  };
  pybind11::object assemble(const CodeOverrides& overrides) const;

  // Where each instruction lands when assembled: final arguments (jump arguments resolved) and
  // start and size in code units (EXTENDED_ARG prefixes and caches included).
  struct Layout {
    std::vector<int> args;
    std::vector<int> starts;
    std::vector<int> sizes;
  };
  Layout layout() const;
  // The exception table for `layout`: runs of consecutive instructions with the same handler, as
  // the compiler writes it.
  std::vector<ExceptionTableEntry> exception_entries(const Layout& layout) const;

  const std::vector<Instruction>& instructions() const { return instructions_; }
  std::size_t size() const { return instructions_.size(); }
  const Instruction& at(std::size_t index) const { return instructions_.at(index); }
  // Index of the instruction with id `id`; throws BytecodeError if there is none.
  std::size_t index_of(int id) const;
  const pybind11::object& template_code() const { return code_; }
  const pybind11::list& consts() const { return consts_; }
  const pybind11::list& names() const { return names_; }
  const pybind11::list& localsplus_names() const { return localsplus_names_; }
  const std::string& localsplus_kinds() const { return localsplus_kinds_; }

  // --- editing
  // -----------------------------------------------------------------------------------------------
  // Inserts `added` before the instruction at `index` (index == size() appends). The new
  // instructions get fresh ids and is_new; those without a handler or position take the ones of the
  // instruction they are placed before (so code inserted inside a try block stays inside it, and
  // tracebacks point at the user's line). Returns the ids given to them. Their `target` fields
  // refer to existing ids, or to positions in `added` as -(k + 2) (k = 0 for the first added
  // instruction).
  std::vector<int> insert(std::size_t index, std::vector<Instruction> added,
                          InsertOptions options = {});
  // Removes the instruction at `index`; jumps and handlers that targeted it target the next
  // instruction.
  void remove(std::size_t index);
  // Replaces the instruction at `index`, keeping its id (so what targeted it still does).
  void replace(std::size_t index, Instruction instruction);
  // Appends a constant (reusing an existing identical object) and returns its index.
  int add_const(pybind11::handle value);
  // Appends a name (reusing an equal one) and returns its index.
  int add_name(const std::string& name);
  // Adds a local variable after the existing ones (before cells and frees, whose indices shift by
  // one in every instruction that uses them) and returns its localsplus index. An existing local of
  // that name is reused.
  int add_local(const std::string& name);
  // Replaces the localsplus layout (names and kind bytes, as co_localsplusnames and
  // co_localspluskinds) for a code object with another signature (a resume function). The caller
  // renumbers the instructions' localsplus arguments.
  void set_localsplus(pybind11::list names, std::string kinds);

 private:
  explicit Bytecode(pybind11::object code);
  void invalidate_index() const { index_valid_ = false; }
  void check_targets() const;
  int fresh_id() { return next_id_++; }

  pybind11::object code_;
  std::vector<Instruction> instructions_;
  pybind11::list consts_;
  // Identity index of consts_ for add_const (the list holds the references that keep these keys
  // alive).
  std::unordered_map<PyObject*, int> const_index_;
  pybind11::list names_;
  pybind11::list localsplus_names_;
  std::string localsplus_kinds_;
  bool locals_changed_ = false;
  int next_id_ = 0;
  mutable std::vector<int> index_by_id_;  // index of each id, -1 for ids not in use
  mutable bool index_valid_ = false;
};

// Decode then assemble: a new code object that should be byte-identical to `code` (a new
// reference).
pybind11::object roundtrip(PyObject* code);

}  // namespace sot::bytecode
