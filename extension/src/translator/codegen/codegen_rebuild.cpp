// Rebuilding values in generated code: locals, containers, iterators and functions made in the
// frame, values received from outside (loaded again through their trackers), home locals for
// values referenced more than once, and the replayed side effects.
#include "translator/codegen/codegen_emitter.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/localsplus.hpp"
#include "bytecode/opcode_table.hpp"
#include "capture/code_cache.hpp"
#include "core/loaded_module.hpp"
#include "graph/exec/backend.hpp"
#include "translator/codegen/codegen_emitter.hpp"

namespace py = pybind11;

namespace sot::translator {

using bytecode::Instruction;

// `entry`: the Variables of the frame's locals at entry (what each local holds before any store).
CodeGen::Emitter::Emitter(bytecode::Bytecode& target, const std::string& k, GuardSet* g,
                          const std::vector<VarPtr>& entry)
    : bytecode::Emitter(target), kinds(k), guards(g), current(entry), overwritten(k.size(), false) {
  current.resize(k.size());
}

// CPython interns the strings of a code object's constants that look like identifiers, which
// would make a string the frame computed identical to a literal of the same text: such a string
// is loaded out of a one-item list constant instead (lists are not interned into).
void CodeGen::Emitter::load_constant_keeping_identity(const py::object& value) {
  PyObject* v = value.ptr();
  bool identifier_like =
      PyUnicode_CheckExact(v) && PyUnicode_CHECK_INTERNED(v) == 0 && PyUnicode_IS_ASCII(v) != 0;
  // ASCII: one byte per character, NULs included (the whole length is read, never up to a NUL).
  const auto* text = identifier_like ? PyUnicode_1BYTE_DATA(v) : nullptr;
  const Py_ssize_t size = identifier_like ? PyUnicode_GET_LENGTH(v) : 0;
  for (Py_ssize_t k = 0; identifier_like && k < size; ++k) {
    identifier_like = (std::isalnum(text[k]) != 0) || text[k] == '_';
  }
  if (!identifier_like) {
    load_const(value);
    return;
  }
  // (ASCII: made again from its bytes, a new string equal to it; a list constant holding it would
  // leave the code object unhashable.)
  load_const(py::bytes(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size)));
  call_attribute("decode", py::str("ascii"));
}

int CodeGen::Emitter::local_holding(const VarPtr& v) const {
  for (std::size_t j = 0; j < current.size(); ++j) {
    if (current[j] == v && bytecode::localsplus::is_plain_local(kinds[j])) {
      return static_cast<int>(j);
    }
  }
  return -1;
}

// Loads a value through its tracker; false when that is not possible here.
bool CodeGen::Emitter::load_tracked(const VarPtr& v) {
  const Tracker& t = v->tracker();
  switch (t.kind) {
    case Tracker::Kind::kLocal: {
      const auto i = static_cast<std::size_t>(t.index);
      if (t.deref || (i < kinds.size() && bytecode::localsplus::is_cell(kinds[i]))) {
        // A free variable's contents, or an argument that MAKE_CELL (in the prefix) moved into
        // its cell: read through the cell, whose contents the generated code writes only after
        // every load.
        emit("LOAD_DEREF", t.index);
        return true;
      }
      if (i < overwritten.size() && !overwritten[i]) {
        emit("LOAD_FAST", t.index);
        return true;
      }
      const int j = local_holding(v);
      if (j >= 0) {
        emit("LOAD_FAST", j);
        return true;
      }
      return false;
    }
    case Tracker::Kind::kGlobal:
      load_global(py::str(t.key).cast<std::string>());
      return true;
    case Tracker::Kind::kAttr:
      load(t.base);
      load_attr(py::str(t.key).cast<std::string>());
      return true;
    case Tracker::Kind::kItem:
      load(t.base);
      load_const(t.key);
      emit("BINARY_SUBSCR");
      return true;
    case Tracker::Kind::kModule:
      load_const(v->value());  // (the module the guards found at sys.modules[key])
      return true;
    case Tracker::Kind::kCreated:
      return false;
  }
  return false;
}

// The side effects of the frame, replayed once every value the generated code needs is loaded:
// assignments to globals (the last one of each name, in order of first assignment), writes to
// cells whose contents changed, and `del x[:]` of input lists. Every value is loaded before any
// effect happens (a value may be read through what an effect changes), in reverse order, so
// that the effects then run in order, each taking its values from the top.
// `on_stack(v)` is how deep v already lies on the stack (1 = top), or 0: a value made in the
// frame that is there is copied, not built twice.
void CodeGen::Emitter::emit_effects(const SimulationResult& r,
                                    const std::function<std::size_t(const Variable*)>& on_stack) {
  struct Effect {
    enum Kind : std::uint8_t {
      kStoreGlobal,
      kDeleteGlobal,
      kStoreDeref,
      kDeleteDeref,
      kCallMethod,  // name(*value): a change to the list or dict received from outside
      kStoreAttr,
      kDeleteAttr,
      kClear
    };
    Kind kind;
    py::object name;
    int slot = -1;
    VarPtr value;   // pushed first
    VarPtr target;  // pushed above it
  };
  std::vector<Effect> effects;
  for (std::size_t k = 0; k < r.effects.global_stores.size(); ++k) {
    const auto& [name, value] = r.effects.global_stores[k];
    bool seen = false;
    for (std::size_t j = 0; j < k && !seen; ++j) {
      seen =
          PyObject_RichCompareBool(r.effects.global_stores[j].first.ptr(), name.ptr(), Py_EQ) == 1;
    }
    PyErr_Clear();
    if (seen) {
      continue;
    }
    VarPtr last = value;
    VarPtr stored = value;  // the last value the frame assigned to the name, if any
    for (std::size_t j = k + 1; j < r.effects.global_stores.size(); ++j) {
      if (PyObject_RichCompareBool(r.effects.global_stores[j].first.ptr(), name.ptr(), Py_EQ) ==
          1) {
        last = r.effects.global_stores[j].second;
        stored = last ? last : stored;
      }
    }
    PyErr_Clear();
    if (!last && stored) {
      // Assigned, then deleted: the global may not have existed before the frame, so the
      // assignment is replayed too (a bare delete would raise NameError).
      effects.push_back(Effect{Effect::kStoreGlobal, name, -1, stored, nullptr});
    }
    effects.push_back(
        Effect{last ? Effect::kStoreGlobal : Effect::kDeleteGlobal, name, -1, last, nullptr});
  }
  for (const ModelOp& op : r.effects.model_ops) {
    std::vector<VarPtr> call = {r.effects.modeled};
    call.insert(call.end(), op.args.begin(), op.args.end());
    effects.push_back(
        Effect{Effect::kCallMethod, op.method, -1, Variable::tuple(std::move(call)), nullptr});
  }
  for (const AttrStore& a : r.effects.attr_stores) {
    effects.push_back(
        Effect{a.value ? Effect::kStoreAttr : Effect::kDeleteAttr, a.name, -1, a.value, a.object});
  }
  for (const VarPtr& cell : r.effects.cells) {
    const VarPtr now = cell->contents();
    if (now == cell->initial_contents()) {
      continue;
    }
    if (cell->slot() >= 0) {
      effects.push_back(Effect{now ? Effect::kStoreDeref : Effect::kDeleteDeref, py::object(),
                               cell->slot(), now, nullptr});
    } else if (cell->outside()) {
      throw CodegenError("a write to a cell made outside the translation");
    }
    // A cell made by an inlined call is built with its final contents where it is needed.
  }
  for (const VarPtr& list : r.cleared_lists) {
    if (!list->tracker().is_input()) {
      throw CodegenError("cannot load " + list->describe() + " to empty it");
    }
    effects.push_back(Effect{Effect::kClear, py::object(), -1, nullptr, list});
  }
  std::size_t pushed = 0;
  auto push_value = [&](const VarPtr& v) {
    const std::size_t depth = v->is_mutable_created() ? on_stack(v.get()) : 0;
    if (depth > 0) {
      emit("COPY", static_cast<int>(depth + pushed));
    } else {
      load(v);
    }
    ++pushed;
  };
  for (auto it = effects.rbegin(); it != effects.rend(); ++it) {
    if (it->value) {
      push_value(it->value);
    }
    if (it->target) {
      push_value(it->target);
    }
  }
  for (const Effect& ef : effects) {
    switch (ef.kind) {
      case Effect::kStoreGlobal:
        emit("STORE_GLOBAL", bc.add_name(py::str(ef.name).cast<std::string>()));
        break;
      case Effect::kDeleteGlobal:
        emit("DELETE_GLOBAL", bc.add_name(py::str(ef.name).cast<std::string>()));
        break;
      case Effect::kCallMethod:  // [args]: method(*args)
        load_const(ef.name);
        call_ex_discard();
        break;
      case Effect::kStoreAttr:  // [value, object]
        emit("STORE_ATTR", bc.add_name(py::str(ef.name).cast<std::string>()));
        break;
      case Effect::kDeleteAttr:  // [object]
        emit("DELETE_ATTR", bc.add_name(py::str(ef.name).cast<std::string>()));
        break;
      case Effect::kStoreDeref:
        emit("STORE_DEREF", ef.slot);
        break;
      case Effect::kDeleteDeref:
        emit("DELETE_DEREF", ef.slot);
        break;
      case Effect::kClear:
        load_const(py::reinterpret_steal<py::object>(PySlice_New(nullptr, nullptr, nullptr)));
        emit("DELETE_SUBSCR");
        break;
    }
  }
}

// An iterator made in the frame, at its position: built as the frame built it, then moved on.
void CodeGen::Emitter::load_iterator(const VarPtr& v) {
  using IK = Variable::IterKind;
  const Py_ssize_t at = v->position();
  const bool exhausted = at < 0;
  const auto builtin = [](const char* name) {
    return py::reinterpret_borrow<py::object>(PyDict_GetItemString(PyEval_GetBuiltins(), name));
  };
  switch (v->iter_kind()) {
    case IK::kConstSeq: {
      const py::object rest =
          exhausted ? v->value()[py::slice(0, 0, 1)] : v->value()[py::slice(at, PY_SSIZE_T_MAX, 1)];
      load_const(rest);
      emit("GET_ITER");
      return;
    }
    case IK::kItems: {
      const std::size_t first = exhausted ? v->snapshot().size() : static_cast<std::size_t>(at);
      for (std::size_t i = first; i < v->snapshot().size(); ++i) {
        load(v->snapshot()[i]);
      }
      emit("BUILD_TUPLE", static_cast<int>(v->snapshot().size() - first));
      emit("GET_ITER");
      return;
    }
    case IK::kList:
      if (exhausted) {
        emit("BUILD_LIST", 0);  // an exhausted list iterator never yields again
      } else {
        load(v->items()[0]);
      }
      emit("GET_ITER");
      if (!exhausted && at > 0) {
        call_method_keep("__setstate__", py::int_(at));
      }
      return;
    case IK::kReversed: {
      const VarPtr& list = v->items()[0];
      const Py_ssize_t index = v->start() - at;
      if (!exhausted && index > static_cast<Py_ssize_t>(list->items().size()) - 1) {
        throw CodegenError("a reversed() iterator past its list's end");
      }
      call_constant(
          builtin("reversed"),
          [&] {
            if (exhausted) {
              emit("BUILD_LIST", 0);
            } else {
              load(list);
            }
          },
          1);
      if (!exhausted && at > 0) {
        call_method_keep("__setstate__", py::int_(index));
      }
      return;
    }
    case IK::kEnumerate:
      call_constant(
          builtin("enumerate"),
          [&] {
            load(v->items()[0]);
            load_const(py::int_(v->start()).attr("__add__")(py::int_(std::max<Py_ssize_t>(at, 0))));
          },
          2);
      return;
    case IK::kMap:
    case IK::kFilter:
      call_constant(
          builtin(v->iter_kind() == IK::kMap ? "map" : "filter"),
          [&] {
            for (const VarPtr& part : v->items()) {
              load(part);
            }
          },
          static_cast<int>(v->items().size()));
      return;
    case IK::kZip:
      call_constant(
          builtin("zip"),
          [&] {
            for (const VarPtr& inner : v->items()) {
              load(inner);
            }
          },
          static_cast<int>(v->items().size()));
      return;
    case IK::kDictView: {
      const VarPtr& d = v->items()[0];
      if (v->start() != 1 && d->version() != v->seen_version()) {
        throw CodegenError("an iterator over a dict that changed");
      }
      load(d);
      call_attribute(py::str(v->value()).cast<std::string>(), py::object());
      if (v->start() == 1) {
        return;  // the view itself
      }
      emit("GET_ITER");
      const std::size_t steps = exhausted ? v->snapshot().size() : static_cast<std::size_t>(at);
      for (std::size_t k = 0; k < steps; ++k) {
        call_method_keep("__next__", py::object());
      }
      if (exhausted) {
        throw CodegenError("an exhausted dict iterator");
      }
      return;
    }
  }
}

void CodeGen::Emitter::load(const VarPtr& v) {
  // A value made in the frame is built once: later loads read it from its home local, or fail.
  // (A graph output is copied from the graph's result at each load.)
  if (v->kind() == Variable::Kind::kArray && result_on_stack) {
    load_graph_output(v.get());
    return;
  }
  // (A tuple made in the frame is built once when it has a home; else rebuilt at each load.)
  const bool once = v->is_mutable_created() || (made_tuple(v) && home.count(v.get()) != 0);
  if (once) {
    const auto it = built.find(v.get());
    if (it != built.end()) {
      if (it->second < 0) {
        throw CodegenError("a value made in the frame is referenced twice");
      }
      emit("LOAD_FAST", it->second);
      return;
    }
    built[v.get()] = -1;
  }
  if (!loading.insert(v.get()).second) {
    throw CodegenError("a value made in the frame contains itself");
  }
  load_value(v);
  loading.erase(v.get());
  if (const auto h = home.find(v.get()); once && h != home.end()) {
    emit("COPY", 1);
    emit("STORE_FAST", h->second);
    built[v.get()] = h->second;
    overwritten[static_cast<std::size_t>(h->second)] = true;
    current[static_cast<std::size_t>(h->second)] = v;
  }
}

// Values made in the frame that `roots` refer to more than once are built once, into a home
// local: `preferred` (the local that ends up holding the value), else the next of `scratch`.
// Returns the scratch locals used.
std::vector<int> CodeGen::Emitter::assign_homes(const std::vector<VarPtr>& roots,
                                                const std::map<const Variable*, int>& preferred,
                                                const std::vector<int>& scratch) {
  Refs refs;
  for (const VarPtr& v : roots) {
    count_refs(v, &refs);
  }
  if (graph_lazy) {
    for (const VarPtr& in : graph_inputs) {
      count_refs(in, &refs);  // (their locals' entry values are read on the way)
    }
  }
  // A local whose entry value is still to be read, or that is some value's home, is no scratch.
  std::set<int> taken(refs.entry_locals.begin(), refs.entry_locals.end());
  for (const auto& [v, i] : preferred) {
    if (refs.count[v] >= 2) {
      taken.insert(i);
    }
  }
  std::vector<int> usable;
  for (const int i : scratch) {
    if (taken.insert(i).second) {
      usable.push_back(i);
    }
  }
  std::vector<int> used;
  for (const Variable* v : refs.order) {
    // (Graph outputs are copied from the graph's result: no home.)
    if (refs.count[v] < 2 || (v->kind() == Variable::Kind::kArray && !graph_lazy)) {
      continue;
    }
    if (const auto p = preferred.find(v); p != preferred.end()) {
      home[v] = p->second;
    } else if (used.size() < usable.size()) {
      home[v] = usable[used.size()];
      used.push_back(home[v]);
    }
  }
  return used;
}

bool CodeGen::Emitter::made_tuple(const VarPtr& v) {
  return v->kind() == Variable::Kind::kTuple && !v->tracker().is_input();
}

void CodeGen::Emitter::count_refs(const VarPtr& v, Refs* refs) {
  if (!v) {
    return;
  }
  for (const Tracker* t = &v->tracker(); t->is_input(); t = &t->base->tracker()) {
    if (t->kind == Tracker::Kind::kLocal && !t->deref) {
      refs->entry_locals.insert(t->index);
    }
    if (!t->base) {
      break;
    }
  }
  // Objects made in the frame keep their identity (`x is x`, `[x, x]`): tuples too.
  if (v->is_mutable_created() || made_tuple(v)) {
    if (refs->count[v.get()]++ > 0) {
      return;
    }
    refs->order.push_back(v.get());
  }
  switch (v->kind()) {
    case Variable::Kind::kTuple:
    case Variable::Kind::kList:
    case Variable::Kind::kMethod:
    case Variable::Kind::kIter:
    case Variable::Kind::kFunction:
    case Variable::Kind::kDict:
    case Variable::Kind::kInstance:
      for (const VarPtr& item : v->items()) {
        count_refs(item, refs);
      }
      if (v->kind() == Variable::Kind::kInstance) {
        count_refs(v->cls(), refs);
      }
      if (v->kind() == Variable::Kind::kIter) {
        for (const VarPtr& item : v->snapshot()) {
          count_refs(item, refs);
        }
      }
      if (v->kind() == Variable::Kind::kFunction) {
        for (const Variable::Part p :
             {Variable::kDefaults, Variable::kKwDefaults, Variable::kAnnotations}) {
          count_refs(v->part(p), refs);
        }
      }
      return;
    case Variable::Kind::kCell:
      if (v->is_mutable_created()) {
        count_refs(v->contents(), refs);
      }
      return;
    default:
      return;
  }
}

void CodeGen::Emitter::load_value(const VarPtr& v) {
  switch (v->kind()) {
    case Variable::Kind::kNull:
      emit("PUSH_NULL");
      return;
    case Variable::Kind::kConst:
      if (v->tracker().is_input() && load_tracked(v)) {
        return;
      }
      guards->value(v);  // the generated code now relies on the value
      load_constant_keeping_identity(v->value());
      return;
    case Variable::Kind::kObject:
      if (v->tracker().is_input()) {
        if (load_tracked(v)) {
          return;
        }
        throw CodegenError("cannot load " + v->describe() + " again");
      }
      load_const(v->value());
      return;
    case Variable::Kind::kTuple:
      for (const VarPtr& item : v->items()) {
        load(item);
      }
      emit("BUILD_TUPLE", static_cast<int>(v->items().size()));
      return;
    case Variable::Kind::kList: {
      for (const VarPtr& item : v->items()) {
        load(item);
      }
      emit("BUILD_LIST", static_cast<int>(v->items().size()));
      return;
    }
    case Variable::Kind::kCell: {
      if (v->slot() >= 0) {
        load_cell(v->slot());
        return;
      }
      if (v->tracker().is_input()) {
        if (!load_tracked(v)) {
          throw CodegenError("cannot load " + v->describe() + " again");
        }
        return;
      }
      // A cell an inlined call made: types.CellType(contents) (or an empty one).
      const VarPtr contents = v->contents();
      call_constant(
          py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyCell_Type)),
          [&] {
            if (contents) {
              load(contents);
            }
          },
          contents ? 1 : 0);
      return;
    }
    case Variable::Kind::kFunction: {
      if (v->globals()) {
        throw CodegenError("a function made by an inlined function of another module");
      }
      const std::array<const VarPtr*, 3> parts = {&v->part(Variable::kDefaults),
                                                  &v->part(Variable::kKwDefaults),
                                                  &v->part(Variable::kAnnotations)};
      auto load_closure = [&] {
        for (const VarPtr& cell : v->items()) {
          load(cell);
        }
        emit("BUILD_TUPLE", static_cast<int>(v->items().size()));
      };
      const bool has_closure = v->value().attr("co_freevars").cast<py::tuple>().size() > 0;
      int present = 0;
      for (int bit = 0; bit < 3; ++bit) {
        present |= *parts[static_cast<std::size_t>(bit)] ? 1 << bit : 0;
      }
      make_function(
          v->value(), present, has_closure,
          [&](int bit) { load(*parts[static_cast<std::size_t>(bit)]); }, load_closure);
      return;
    }
    case Variable::Kind::kMethod:
      load(v->items()[0]);
      load_attr(py::str(v->value()).cast<std::string>());
      return;
    case Variable::Kind::kIter:
      load_iterator(v);
      return;
    case Variable::Kind::kDict:
      for (std::size_t i = 0; i < v->keys().size(); ++i) {
        load_constant_keeping_identity(v->keys()[i]);
        load(v->items()[i]);
      }
      emit("BUILD_MAP", static_cast<int>(v->keys().size()));
      return;
    case Variable::Kind::kSuper: {
      const py::object super_type =
          py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PySuper_Type));
      call_constant(
          super_type,
          [&] {
            load(v->items()[0]);
            load(v->items()[1]);
          },
          2);
      return;
    }
    case Variable::Kind::kSlice:  // (made and used inside a loop body captured as a loop op only)
      throw CodegenError("a slice of values of the graph");
    case Variable::Kind::kListBuffer:  // (the same)
      throw CodegenError("a list appended to in a loop body");
    case Variable::Kind::kArray:
      if (graph_lazy && !graph_done && graph_outputs.size() == 1 && graph_outputs[0] == v.get()) {
        emit_graph_call();
        return;
      }
      throw CodegenError("a NumPy value the graph does not output");
    case Variable::Kind::kInstance:
      // object.__new__(C), then its attributes stored in order (its __dict__ as the frame left it)
      call_constant(
          py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyBaseObject_Type))
              .attr("__new__"),
          [&] { load(v->cls()); }, 1);
      for (std::size_t i = 0; i < v->keys().size(); ++i) {
        emit("COPY", 1);
        load(v->items()[i]);
        emit("SWAP", 2);
        emit("STORE_ATTR", bc.add_name(py::str(v->keys()[i]).cast<std::string>()));
      }
      return;
    case Variable::Kind::kSet:
      // The same updates as the frame's (the set's table, so its order, comes out the same).
      emit("BUILD_SET", 0);
      for (const VarPtr& segment : v->snapshot()) {
        load_const(segment->value());
        emit("SET_UPDATE", 1);
      }
      return;
  }
}

void CodeGen::Emitter::emitted(const Instruction& ins) {
  if (result_on_stack) {
    int effect = 0;
    if (bytecode::stack_effect(ins.opcode, ins.arg, false, &effect)) {
      above += effect;
    } else {
      depth_known = false;
    }
  }
}

void CodeGen::Emitter::jumped() {
  depth_known = depth_known && !result_on_stack;
}

}  // namespace sot::translator
