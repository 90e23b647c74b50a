// Tier C's emitter (whole_emitter.hpp): the loop op's function, its steps and nested loops as C++
// loops, each op through its handler (whole_ops.hpp).
#include "graph/backends/cpu/whole/whole_emitter.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/backends/cpu/whole/whole_emitter_class.hpp"
#include "graph/backends/cpu/whole/whole_prelude.hpp"
#include "graph/exec/cond_op.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

namespace {

// The slot field a value of kind `t` travels in between the runner and the code.
std::string slot_field(const WType& t) {
  if (t.kind == Kind::kArray) {
    return "a";
  }
  if (t.c_kind() == 'f') {
    return t.dtype == DType::kFloat32 && t.kind == Kind::kScalar ? "f32" : "f";
  }
  return t.dtype == DType::kUInt64 ? "u" : "i";
}

}  // namespace

Val Emitter::value(const Scope& s, int id) {
  const auto k = static_cast<std::size_t>(id);
  if (s.has[k]) {
    return s.vals[k];
  }
  const Value& v = s.graph->value(id);
  if (v.source == Value::Source::kConst) {
    return constant(v.constant);
  }
  refuse("a value used before it is made");
}

Val Emitter::slice(const py::handle& item, const std::function<Val()>& index) {
  // (a part that is Ellipsis stands for the next index value: getitem_at's template)
  Val v;
  for (const char* part : {"start", "stop", "step"}) {
    const py::object p = item.attr(part);
    if (p.is_none()) {
      v.slice.emplace_back();
      continue;
    }
    const Val x = p.ptr() == Py_Ellipsis ? index() : constant(p);
    if (x.type.kind != Kind::kPyInt || x.is_slice()) {
      refuse("a slice of something other than Python ints");
    }
    v.slice.push_back(x.expr);
  }
  if (v.slice[2] == "0LL" || v.slice[2] == "0") {
    refuse("a slice step of zero");
  }
  return v;
}

Val Emitter::constant(const py::handle& c) {
  std::string why;
  const auto lit = literal(c, &why);
  if (!lit) {
    refuse(why);
  }
  return Val{lit->expr, lit->type, -1};
}

// The items of a constant key (x[1, :, None], x[2:]): its slices, None (a new dimension) and
// literals.
void Emitter::key_items(const py::handle& key, std::vector<Val>* vals) {
  const auto no_index = []() -> Val { refuse("a slice of values in a constant key"); };
  const auto item_of = [&](const py::handle& item) {
    Val v;
    v.newaxis = item.is_none();
    return v.newaxis ? v : PySlice_Check(item.ptr()) != 0 ? slice(item, no_index) : constant(item);
  };
  if (PyTuple_Check(key.ptr())) {
    for (const py::handle item : py::reinterpret_borrow<py::tuple>(key)) {
      vals->push_back(item_of(item));
    }
  } else {
    vals->push_back(item_of(key));
  }
}

// getitem_at/setitem_at's array and key: the template's items with the index values in its None
// places; the index of the op's first argument after them.
std::size_t Emitter::at_items(const Scope& s, const Op& op, std::vector<Val>* vals) {
  if (op.args.size() < 3 || op.args[0].kind != Arg::Kind::kValue ||
      op.args[1].kind != Arg::Kind::kConst || !PyTuple_Check(op.args[1].constant.ptr())) {
    refuse(op.name + " of another form");
  }
  vals->push_back(value(s, op.args[0].value));
  std::size_t next = 2;
  const auto index = [&]() {  // the next index value of the op's arguments
    if (next >= op.args.size() || op.args[next].kind != Arg::Kind::kValue) {
      refuse(op.name + " with too few indices");
    }
    return value(s, op.args[next++].value);
  };
  for (const py::handle item : py::reinterpret_borrow<py::tuple>(op.args[1].constant)) {
    if (PySlice_Check(item.ptr()) != 0) {
      vals->push_back(slice(item, index));
    } else {
      vals->push_back(item.is_none() ? index() : constant(item));
    }
  }
  return next;
}

std::vector<Val> Emitter::shape_operands(const Scope& s, const Op& op) {
  // (np.zeros(shape, dtype), np.full(shape, v, dtype): the shape's sizes, then the value;
  // np.zeros_like(a, dtype), np.full_like(a, v, dtype): the array, then the value; the dtype is
  // the result's)
  for (const auto& [name, arg] : op.kwargs) {
    if (name != "dtype") {
      refuse(op.name + " with keyword arguments other than dtype");
    }
  }
  const bool full = op.name == "full" || op.name == "full_like";
  const std::size_t parts = full ? 2 : 1;
  if (op.args.size() < parts || op.args.size() > parts + 1) {
    refuse(op.name + " of another form");
  }
  const Arg& a = op.args[0];
  std::vector<Val> vals;
  const auto one = [&](const Arg& x) {
    if (x.kind == Arg::Kind::kValue) {
      return value(s, x.value);
    }
    if (x.kind != Arg::Kind::kConst) {
      refuse(op.name + " of another form");
    }
    return constant(x.constant);
  };
  if (op.name.size() > 5 && op.name.compare(op.name.size() - 5, 5, "_like") == 0) {
    vals.push_back(one(a));
  } else if (a.kind == Arg::Kind::kValue) {
    vals.push_back(value(s, a.value));
  } else if (a.kind == Arg::Kind::kConst && PyTuple_Check(a.constant.ptr())) {
    for (const py::handle item : a.constant) {
      vals.push_back(constant(item));
    }
  } else if (a.kind == Arg::Kind::kConst) {
    vals.push_back(constant(a.constant));
  } else {
    for (const int v : a.values) {
      vals.push_back(value(s, v));
    }
  }
  if (full) {
    vals.push_back(one(op.args[1]));
  }
  return vals;
}

// The op's operands: values and constants in order; a getitem/setitem key becomes its indices (a
// tuple constant's items; getitem_at/setitem_at's template with the index values in its None
// places).
std::vector<Val> Emitter::operands(const Scope& s, const Op& op) {
  if (filled_op(op.name)) {
    return shape_operands(s, op);
  }
  std::vector<Val> vals;
  const bool axis = op.name == "sum" && op.kwargs.size() == 1 && op.kwargs[0].first == "axis" &&
                    op.kwargs[0].second.kind == Arg::Kind::kConst;
  // (arange's dtype is its result's)
  const bool dtype = op.name == "arange" && op.kwargs.size() == 1 && op.kwargs[0].first == "dtype";
  if (!op.kwargs.empty() && !axis && !dtype) {
    refuse(op.name + " with keyword arguments");
  }
  if (op.name == "astype") {  // (the dtype is the result's: only the array is an operand)
    if (op.args.empty() || op.args[0].kind != Arg::Kind::kValue) {
      refuse("astype of another form");
    }
    return {value(s, op.args[0].value)};
  }
  const bool indexes = op.name == "getitem" || op.name == "setitem";
  const bool at = op.name == "getitem_at" || op.name == "setitem_at";
  const std::size_t first = at ? at_items(s, op, &vals) : 0;
  for (std::size_t k = first; k < op.args.size(); ++k) {
    const Arg& a = op.args[k];
    if (a.kind == Arg::Kind::kValue) {
      vals.push_back(value(s, a.value));
    } else if (a.kind == Arg::Kind::kConst && indexes && k == 1) {
      key_items(a.constant, &vals);
    } else if (a.kind == Arg::Kind::kConst) {
      vals.push_back(constant(a.constant));
    } else {
      for (const int v : a.values) {
        vals.push_back(value(s, v));
      }
    }
  }
  if (axis) {  // (sum(x, axis=k): the axis after the array)
    vals.push_back(constant(op.kwargs[0].second.constant));
  }
  return vals;
}

void Emitter::ops(Scope& s) {
  for (const Op& o : s.graph->ops()) {
    op(s, o);
  }
}

void Emitter::op(Scope& s, const Op& o) {
  std::string why;
  const auto result = type_of(s.graph->value(o.result).info, &why);
  if (o.name == "loop") {
    const LoopBody* body = loop_body_of(o.fn);
    if (body == nullptr) {
      refuse("a loop op without its body");
    }
    loop(s, body->current_spec(), operands(s, o), o.result);
    return;
  }
  if (o.name == "cond") {
    const CondBody* body = cond_body_of(o.fn);
    if (body == nullptr) {
      refuse("a cond op without its ways");
    }
    cond(s, body->current_spec(), operands(s, o), o.result);
    return;
  }
  if (o.name == "loop_output" || o.name == "cond_output") {
    const Val tuple = value(s, o.args[0].value);
    const auto k = o.args[1].constant.cast<std::size_t>();
    bind(s, o.result, tuples_.at(static_cast<std::size_t>(tuple.arg)).at(k));
    return;
  }
  if (!result) {
    refuse(o.name + ": " + why);
  }
  const Handler h = handler_for(o.name, s.graph->value(o.result).info.python != 0);
  if (h == nullptr) {
    refuse("no native form of " + o.name);
  }
  OpCtx c;
  c.op = &o;
  c.graph = s.graph;
  c.loops = &src_.ufunc_loops;
  c.args = operands(s, o);
  c.result = *result;
  c.name = fresh("v");
  c.give_up = static_cast<int>(src_.ops.size());
  c.out = Val{c.name, *result, -1};
  c.size_hint = 1;
  for (const std::int64_t d : s.graph->value(o.result).info.shape) {
    c.size_hint = d < 0 || c.size_hint < 0 ? -1 : c.size_hint * d;
  }
  const bool made =
      result->kind == Kind::kArray && elementwise_op(o.name) ? elementwise(c, h) : h(c);
  if (!made) {
    refuse(o.name + ": " + c.why);
  }
  if (c.makes_array) {
    ++arrays_;
    src_.makes_arrays = true;
    src_.largest_array = std::max(src_.largest_array, c.size_hint);
  }
  src_.ops.push_back(o.name + " (line " + std::to_string(o.line) + ")");
  for (const std::string& l : c.lines) {
    line(l);
  }
  if (result->kind == Kind::kScalar && result->c_kind() == 'f') {  // (its flags: SOT_KEEP)
    if (c.out.expr != c.name) {
      line("const " + result->c_type() + " " + c.name + " = " + c.out.expr + ";");
      c.out.expr = c.name;
    }
    line("SOT_KEEP(" + c.name + ");");
  }
  for (const int w : c.written) {
    src_.written.push_back(w);
  }
  bind(s, o.result, c.out);
}

std::vector<Val> Emitter::body(const Graph& g, const std::vector<Val>& inputs,
                               const std::vector<int>& outputs) {
  Scope b;
  b.graph = &g;
  b.vals.resize(g.values().size());
  b.has.resize(g.values().size(), false);
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    bind(b, g.inputs()[j], inputs[j]);
  }
  ops(b);
  std::vector<Val> outs;
  outs.reserve(outputs.size());
  for (const int o : outputs) {
    outs.push_back(value(b, o));
  }
  return outs;
}

std::vector<Val> Emitter::output_vars(const Graph& g, const std::vector<int>& outputs,
                                      std::size_t count, std::size_t arrays, const char* what,
                                      const std::vector<bool>& unread, bool handed_out) {
  std::vector<Val> vars;
  for (std::size_t k = 0; k < count; ++k) {
    if (k >= arrays && k < unread.size() && unread[k]) {
      Val v{fresh("c"), WType{}, -1};
      v.absent = true;
      vars.push_back(v);
      continue;
    }
    std::string why;
    const auto t = type_of(g.value(outputs[k]).info, &why);
    // (a whole graph's arrays: hand_out says which)
    const bool out = handed_out && t && t->kind == Kind::kArray && t->ndim >= 1;
    if (!t || (!t->number() && !out && (k >= arrays || t->ndim < 1))) {
      refuse(t ? std::string("a ") + what + " whose result is an array" : why);
    }
    vars.push_back(Val{fresh("c"), *t, -1});
    vars.back().handed_out = out;
  }
  return vars;
}

WholeSource Emitter::run(const LoopSpec& spec) {
  // The function's arguments are the loop op's: the carried values, the read-only ones, the
  // entry tests; the body's inputs say their kinds.
  std::vector<Val> args;
  std::size_t j = 0;
  const std::size_t nargs = spec.body.inputs().size() - (spec.index_input >= 0 ? 1 : 0) -
                            (spec.counter_input >= 0 ? 1 : 0);
  for (std::size_t k = 0; k < spec.body.inputs().size(); ++k) {
    if (static_cast<int>(k) == spec.index_input || static_cast<int>(k) == spec.counter_input) {
      continue;
    }
    std::string why;
    const auto t = type_of(spec.body.value(spec.body.inputs()[k]).info, &why);
    if (!t) {
      refuse("loop input: " + why);
    }
    const std::string name = fresh("a");
    const std::string in = "in[" + std::to_string(j) + "]";
    if (t->kind == Kind::kArray) {
      std::string text = "const SotArr* const " + name;
      text += " = " + in + ".a;";
      line(text);
    } else {
      std::string text = "const " + t->c_type() + " " + name + " = static_cast<" + t->c_type();
      text += ">(" + in + "." + slot_field(*t) + ");";
      line(text);
    }
    args.push_back(Val{name, *t, t->kind == Kind::kArray ? static_cast<int>(j) : -1});
    args.back().whole = t->kind == Kind::kArray;
    arg_exprs_.push_back(t->kind == Kind::kArray ? name : "");
    src_.args.push_back(*t);
    ++j;
  }
  if (j != nargs) {
    refuse("the loop's inputs do not match its arguments");
  }
  for (std::size_t k = 0; k < spec.entry_go_on_if.size(); ++k) {
    // (the entry tests: the frame's values, Python bools or NumPy booleans)
    WType t;
    t.kind = Kind::kPyBool;
    const std::string name = fresh("e");
    line("const bool " + name + " = in[" + std::to_string(j) + "].i != 0;");
    args.push_back(Val{name, t, -1});
    src_.args.push_back(t);
    ++src_.tests;
    ++j;
  }
  Graph top;
  Scope s;
  s.graph = &top;
  s.vals.resize(1);
  s.has.resize(1, false);
  loop(s, spec, args, 0);
  mark_passed_groups_written();
  const std::vector<Val>& outs = tuples_.at(static_cast<std::size_t>(s.vals[0].arg));
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const std::string slot = "out[" + std::to_string(k) + "].";
    src_.unread.push_back(outs[k].absent);
    src_.handed_out.push_back(outs[k].handed_out);
    if (outs[k].absent || outs[k].handed_out) {  // (handed out: its slot written in the step)
      src_.outputs.push_back(outs[k].type);
      continue;
    }
    if (outs[k].type.kind == Kind::kArray && outs[k].passed_on) {  // (1 + the input it is)
      std::string which = "0ULL";
      for (std::size_t a = spec.ncarried; a-- > 0;) {
        if (args[a].type.kind == Kind::kArray) {
          which = cat({outs[k].expr, " == ", args[a].expr, " ? ", std::to_string(a + 1), "ULL : (",
                       which, ")"});
        }
      }
      line(cat({slot, "u = ", which, ";"}));
    } else if (outs[k].type.kind == Kind::kArray) {  // (the buffer's data, or 0: the input itself)
      line(slot + "u = " + outs[k].expr + " == &" + outs[k].expr +
           "_view ? reinterpret_cast<unsigned long long>(" + outs[k].expr + "_buf) : 0ULL;");
    } else {
      line(slot + slot_field(outs[k].type) + " = " + outs[k].expr + ";");
    }
    src_.outputs.push_back(outs[k].type);
  }
  line("return 0;");
  std::ostringstream code;
  code << prelude();
  code << "extern \"C\" int sot_whole(const SotSlot* in, SotSlot* out, SotEnv* env) {\n";
  code << "  long long env_tick = 65536;\n";
  code << out_.str() << "}\n";
  src_.code = code.str();
  return std::move(src_);
}

std::optional<WholeSource> emit_loop(const LoopSpec& spec, std::string* why) {
  try {
    try {
      return Emitter(true).run(spec);
    } catch (const WrongLayoutGuess&) {
      return Emitter(false).run(spec);
    }
  } catch (const Refused& r) {
    *why = r.why;
  } catch (py::error_already_set& e) {
    *why = std::string("a Python error: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace sot::graph::whole
