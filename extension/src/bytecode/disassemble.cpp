#include "bytecode/disassemble.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"

namespace py = pybind11;

namespace sot::bytecode {

namespace {

struct Row {
  int offset = 0;  // bytes
  std::string opname;
  bool has_arg = false;
  int arg = 0;
  std::string argrepr;
  int line = -1;
  bool starts_line = false;
  int jump_target = -1;  // bytes
  bool is_jump_target = false;
};

class ArgDescriber {
 public:
  explicit ArgDescriber(const Bytecode& b) : b_(b) {
    const py::module_ dis = py::module_::import("dis");
    const py::module_ opcode = py::module_::import("opcode");
    cmp_op_ = dis.attr("cmp_op");
    nb_ops_ = opcode.attr("_nb_ops");
    intrinsic1_ = py::getattr(opcode, "_intrinsic_1_descs", py::none());
    intrinsic2_ = py::getattr(opcode, "_intrinsic_2_descs", py::none());
  }

  std::string describe(const Instruction& ins, int arg, int jump_target_offset) const {
    const OpcodeInfo& info = opcode_info(ins.opcode);
    const std::string name = info.name;
    switch (info.arg_kind) {
      case ArgKind::kConst:
        if (version::kDisShowsOnlyLoadConstValue && name != "LOAD_CONST") {
          return "";
        }
        return item_repr(b_.consts(), arg);
      case ArgKind::kName: {
        int shift = 0;
        std::string prefix;
        if (name == "LOAD_GLOBAL") {
          shift = version::kLoadGlobalNameShift;
          prefix = "NULL + ";
        } else if (name == "LOAD_ATTR") {
          shift = version::kLoadAttrNameShift;
          prefix = "NULL|self + ";
        } else if (name == "LOAD_SUPER_ATTR") {
          shift = version::kLoadSuperAttrNameShift;
          prefix = "NULL|self + ";
        }
        const std::string text = item_str(b_.names(), arg >> shift);
        return (shift > 0 && (arg & 1) != 0 && !text.empty()) ? prefix + text : text;
      }
      case ArgKind::kLocal:
      case ArgKind::kFree:
        return item_str(b_.localsplus_names(), arg);
      case ArgKind::kLocalPair:
        return item_str(b_.localsplus_names(), arg >> 4) + ", " +
               item_str(b_.localsplus_names(), arg & 15);
      case ArgKind::kCompare:
        return item_str(cmp_op_, arg >> version::kCompareOpShift);
      case ArgKind::kJumpForward:
      case ArgKind::kJumpBackward:
      case ArgKind::kJumpAbsolute:
        return "to " + std::to_string(jump_target_offset);
      case ArgKind::kNone:
        return "";
      case ArgKind::kRaw:
        break;
    }
    if (name == "BINARY_OP") {
      const py::sequence ops = nb_ops_;
      if (arg >= 0 && static_cast<std::size_t>(arg) < ops.size()) {
        return py::str(py::sequence(ops[static_cast<std::size_t>(arg)])[1]).cast<std::string>();
      }
      return "";
    }
    if (name == "FORMAT_VALUE") {
      static const char* const kConverters[] = {"", "str", "repr", "ascii"};
      std::string text = kConverters[arg & 3];
      if ((arg & 4) != 0) {
        text += text.empty() ? "with format" : ", with format";
      }
      return text;
    }
    if (name == "MAKE_FUNCTION") {
      static const char* const kFlags[] = {"defaults", "kwdefaults", "annotations", "closure"};
      std::string text;
      for (int bit = 0; bit < 4; ++bit) {
        if ((arg & (1 << bit)) != 0) {
          text += (text.empty() ? "" : ", ") + std::string(kFlags[bit]);
        }
      }
      return text;
    }
    if (name == "CALL_INTRINSIC_1" && !intrinsic1_.is_none()) {
      return item_str(intrinsic1_, arg);
    }
    if (name == "CALL_INTRINSIC_2" && !intrinsic2_.is_none()) {
      return item_str(intrinsic2_, arg);
    }
    return "";
  }

 private:
  static std::string item_str(const py::object& seq, int index) {
    const py::sequence s = seq;
    if (index < 0 || static_cast<std::size_t>(index) >= s.size()) {
      return "<" + std::to_string(index) + ">";
    }
    return py::str(s[static_cast<std::size_t>(index)]).cast<std::string>();
  }
  static std::string item_repr(const py::object& seq, int index) {
    const py::sequence s = seq;
    if (index < 0 || static_cast<std::size_t>(index) >= s.size()) {
      return "<" + std::to_string(index) + ">";
    }
    const py::object item = s[static_cast<std::size_t>(index)];
    try {
      return py::repr(item).cast<std::string>();
    } catch (py::error_already_set&) {  // e.g. an int past sys.get_int_max_str_digits()
      return "<" + std::string(Py_TYPE(item.ptr())->tp_name) + " too large to show>";
    }
  }

  const Bytecode& b_;
  py::object cmp_op_;
  py::object nb_ops_;
  py::object intrinsic1_;
  py::object intrinsic2_;
};

std::vector<Row> make_rows(const Bytecode& b, const Bytecode::Layout& layout) {
  const std::vector<Instruction>& ins = b.instructions();
  std::set<int> targets;  // offsets in bytes that are jump or handler targets
  for (const Instruction& i : ins) {
    if (opcode_info(i.opcode).is_jump()) {
      targets.insert(2 * layout.starts[b.index_of(i.target)]);
    }
    if (i.handler) {
      targets.insert(2 * layout.starts[b.index_of(i.handler->target)]);
    }
  }
  const ArgDescriber describer(b);
  std::vector<Row> rows;
  rows.reserve(ins.size());
  int last_line = -1;
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const Instruction& i = ins[k];
    const OpcodeInfo& info = opcode_info(i.opcode);
    Row r;
    r.offset = 2 * layout.starts[k];
    r.opname = info.name;
    r.has_arg = info.has_arg();
    r.arg = layout.args[k];
    if (info.is_jump()) {
      r.jump_target = 2 * layout.starts[b.index_of(i.target)];
    }
    r.argrepr = r.has_arg ? describer.describe(i, r.arg, r.jump_target) : "";
    r.line = i.position.line;
    if (i.position.line >= 0 && i.position.line != last_line) {
      r.starts_line = true;
      last_line = i.position.line;
    }
    r.is_jump_target = targets.count(r.offset) != 0;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}
std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::string disassemble_text(const Bytecode& bytecode) {
  const Bytecode::Layout layout = bytecode.layout();
  const std::vector<Row> rows = make_rows(bytecode, layout);
  int max_line = 0;
  int max_offset = 0;
  for (const Row& r : rows) {
    max_line = std::max(max_line, r.line);
    max_offset = std::max(max_offset, r.offset);
  }
  const std::size_t line_width = max_line >= 1000 ? std::to_string(max_line).size() : 3;
  const std::size_t offset_width = max_offset >= 10000 ? std::to_string(max_offset).size() : 4;
  std::string
      out;  // (built as a string: no stream, so nothing depends on the C++ library's locale)
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    if (r.starts_line && k > 0) {
      out += "\n";
    }
    std::string text =
        r.starts_line ? pad_left(std::to_string(r.line), line_width) : std::string(line_width, ' ');
    text += "     ";  // separators around the current-instruction marker column
    text += r.is_jump_target ? ">>" : "  ";
    text += " " + pad_left(std::to_string(r.offset), offset_width);
    text += " " + pad_right(r.opname, 20);
    if (r.has_arg) {
      text += " " + pad_left(std::to_string(r.arg), 5);
      if (!r.argrepr.empty()) {
        text += " (" + r.argrepr + ")";
      }
    }
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    out += text + "\n";
  }
  // Exception table, as dis prints it.
  const std::vector<ExceptionTableEntry> entries = bytecode.exception_entries(layout);
  if (!entries.empty()) {
    out += "ExceptionTable:\n";
  }
  for (const ExceptionTableEntry& e : entries) {
    out += "  " + std::to_string(2 * e.start) + " to " + std::to_string(2 * e.end - 2) + " -> " +
           std::to_string(2 * e.target) + " [" + std::to_string(e.depth) + "]" +
           (e.lasti ? " lasti" : "") + "\n";
  }
  return out;
}

py::list disassemble_rows(const Bytecode& bytecode) {
  const std::vector<Row> rows = make_rows(bytecode, bytecode.layout());
  const std::vector<Instruction>& ins = bytecode.instructions();
  py::list out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    py::dict d;
    d["id"] = ins[k].id;
    d["offset"] = r.offset;
    d["opname"] = r.opname;
    d["opcode"] = ins[k].opcode;
    d["arg"] = r.has_arg ? py::object(py::int_(r.arg)) : py::object(py::none());
    d["argrepr"] = r.argrepr;
    d["line"] = r.line >= 0 ? py::object(py::int_(r.line)) : py::object(py::none());
    d["starts_line"] = r.starts_line;
    d["jump_target"] =
        r.jump_target >= 0 ? py::object(py::int_(r.jump_target)) : py::object(py::none());
    d["is_jump_target"] = r.is_jump_target;
    d["is_new"] = ins[k].is_new;
    d["original_offset"] = ins[k].original_offset >= 0
                               ? py::object(py::int_(ins[k].original_offset))
                               : py::object(py::none());
    out.append(d);
  }
  return out;
}

}  // namespace sot::bytecode
