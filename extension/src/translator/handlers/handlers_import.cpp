// Imports: IMPORT_NAME and IMPORT_FROM of modules the process has imported already. `import m`,
// `import a.b`, `import a.b as c` and `from a import b` inside a function, where every module the
// import statement names is in sys.modules (and not being initialized) and builtins.__import__ is
// CPython's own, run no code: the import gives the module sys.modules holds. So the handler pushes
// that module, tracked as sys.modules[name] (Tracker::Kind::kModule: guards read it there and
// check it is the same module; generated code loads the object itself), and `from a import b`
// pushes a's attribute b, which a has already. Anything else breaks the graph and runs for real:
// a module not imported yet (its code would run), a relative import, `from a import *`, a name a
// module does not have (the import system would try a submodule).
#include <string>

#include "core/loaded_module.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// sys.modules[name] when it is there and not being initialized, else a null object.
py::object imported(const std::string& name) {
  const py::dict modules = loaded_module("sys").attr("modules");
  const py::str key(name);
  if (!modules.contains(key)) {
    return {};
  }
  py::object m = modules[key];
  const py::object spec = py::getattr(m, "__spec__", py::none());
  if (!spec.is_none() && py::getattr(spec, "_initializing", py::bool_(false)).cast<bool>()) {
    return {};
  }
  return m;
}

}  // namespace

VarPtr OpcodeExecutor::imported_module(const std::string& name) {
  const py::object m = imported(name);
  if (!m) {
    graph_break("an import of '" + name + "', not imported yet (its code would run)");
  }
  Tracker t;
  t.kind = Tracker::Kind::kModule;
  t.key = py::str(name);
  VarPtr v = Variable::object(m, std::move(t));
  guards_->identity(v);
  return v;
}

void OpcodeExecutor::op_import_name(const bytecode::Instruction& ins) {
  const std::string name = str_of(code_.names()[static_cast<std::size_t>(ins.arg)]);
  const VarPtr& fromlist = peek(1);
  const VarPtr& level = peek(2);
  if (!level->is_const() || !PyLong_CheckExact(level->value().ptr()) ||
      level->value().cast<long long>() != 0) {
    graph_break("a relative import");
  }
  const bool from = !(fromlist->is_const() && fromlist->value().is_none());
  if (from) {
    const py::object names = fromlist->is_const() ? fromlist->value() : py::object();
    if (!names || !PyTuple_CheckExact(names.ptr())) {
      graph_break("an import whose from-list is not a tuple of names");
    }
    for (const py::handle n : names) {
      if (!PyUnicode_Check(n.ptr()) || str_of(n) == "*") {
        graph_break("from " + name + " import *");
      }
    }
  }
  // CPython's own import: a replaced builtins.__import__ would be called instead.
  const VarPtr import_fn = load_global(py::str("__import__"));
  if (!import_fn ||
      import_fn->value().ptr() != py::object(loaded_module("builtins").attr("__import__")).ptr()) {
    graph_break("an import through a replaced builtins.__import__");
  }
  guards_->identity(import_fn);
  VarPtr module = imported_module(name);
  if (from) {
    for (const py::handle n : fromlist->value()) {
      if (!py::hasattr(module->value(), n)) {
        graph_break("from " + name + " import " + str_of(n) + ", a name the module does not have");
      }
    }
  } else if (const auto dot = name.find('.'); dot != std::string::npos) {
    module = imported_module(name.substr(0, dot));  // (the top package, `name` guarded too)
  }
  pop();
  pop();
  push(std::move(module));
}

void OpcodeExecutor::op_import_from(const bytecode::Instruction& ins) {
  const py::object name = code_.names()[static_cast<std::size_t>(ins.arg)];
  const VarPtr& module = peek(1);
  if (module->kind() != Variable::Kind::kObject || !PyModule_Check(module->value().ptr()) ||
      !py::hasattr(module->value(), name)) {
    graph_break("from ... import " + str_of(name) +
                " of something that is not a module holding it");
  }
  push(load_attr(module, name));
}

}  // namespace sot::translator
