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

#include "graph/backends/cpu/whole/whole_prelude.hpp"
#include "graph/exec/cond_op.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

namespace {

// A refusal: the reason travels up as the emitter's `why`.
struct Refused {
  std::string why;
};
// A carried array guessed C-ordered whose step makes it otherwise: emitted again without guesses.
struct WrongLayoutGuess {};

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

class Emitter {
 public:
  // `guess_layouts`: a carried array that starts C-ordered is taken as one in its loop's body.
  explicit Emitter(bool guess_layouts) : guess_layouts_(guess_layouts) {}
  WholeSource run(const LoopSpec& spec);

 private:
  struct Scope {
    const Graph* graph = nullptr;
    std::vector<Val> vals;  // by value id (an empty expr: not made yet)
    std::vector<bool> has;
  };

  void line(const std::string& text) {
    out_ << std::string(2 * static_cast<std::size_t>(indent_), ' ') << text << "\n";
  }
  std::string fresh(const char* stem) { return stem + std::to_string(serial_++); }
  [[noreturn]] static void refuse(const std::string& why) { throw Refused{why}; }

  void bind(Scope& s, int id, Val v) {
    s.vals[static_cast<std::size_t>(id)] = std::move(v);
    s.has[static_cast<std::size_t>(id)] = true;
  }
  static Val value(const Scope& s, int id);
  static Val constant(const py::handle& c);
  // A slice item of a key: its constant parts, and the values `index` gives for its Ellipsis parts.
  static Val slice(const py::handle& item, const std::function<Val()>& index);
  std::vector<Val> operands(const Scope& s, const Op& op);
  std::vector<Val> shape_operands(const Scope& s, const Op& op);
  static void key_items(const py::handle& key, std::vector<Val>* vals);
  std::size_t at_items(const Scope& s, const Op& op, std::vector<Val>* vals);
  void ops(Scope& s);
  void op(Scope& s, const Op& op);
  // A loop op: its outputs bound as tuple items of `result` (loop_output ops read them).
  void loop(Scope& s, const LoopSpec& spec, const std::vector<Val>& args, int result);
  // A cond op: each way in a branch of an `if` on its test, its outputs bound as loop's are.
  void cond(Scope& s, const CondSpec& spec, const std::vector<Val>& args, int result);
  // The ops of `g` with its inputs bound to `inputs`: the values of `outputs`.
  std::vector<Val> body(const Graph& g, const std::vector<Val>& inputs,
                        const std::vector<int>& outputs);
  // Number variables for the outputs `outputs` of `g` (a loop's carried and last values, a cond's).
  // (the first `arrays` may be vectors: a loop's carried arrays; with `handed_out` any may be: a
  // whole graph's results, which its step hands out itself)
  std::vector<Val> output_vars(const Graph& g, const std::vector<int>& outputs, std::size_t count,
                               std::size_t arrays, const char* what,
                               const std::vector<bool>& unread, bool handed_out = false);
  // A whole graph's array result `v`, output `k` (hand_out_lines).
  void hand_out(std::size_t k, const Val& v);
  // After a step's body: the values `vars` take from `outs` (`from`: passed_on's;
  // `args`: the loop's, the carried values' first values).
  void step_outputs(std::vector<Val>* vars, const std::vector<Val>& outs,
                    const std::vector<int>& from, const std::vector<Val>& args);
  // A carried array: `var` (a SotArr*) starts as `init`, its buffer made before the loop; each
  // step's new array (`out`) copied into the buffer at its end (carry_array).
  void carried_array(Val* var, const Val& init);
  void carry_array(const Val& var, const Val& out);
  int carried_give_up();  // the give-up number of a carried array's checks
  // The carried arrays a step hands on as they are (`u_prev, u, u_next = u, u_next, u_prev`): per
  // carried value, the carried array it is after the step (-1: none). They are handed on among
  // themselves only (a pointer each, no buffer), all arguments or all made in the code.
  std::vector<int> passed_on(const std::vector<Val>& vars, const std::vector<Val>& outs,
                             std::size_t ncarried);
  // Each group of arguments handed on among themselves of which one is written (by the loop or,
  // for an inner loop, by the code after it): all of them written (called once all is emitted).
  void mark_passed_groups_written();

  bool guess_layouts_;
  std::ostringstream out_;
  int indent_ = 1;
  int serial_ = 0;
  int arrays_ = 0;  // the ops so far that made arrays (a step that makes any releases them)
  int carried_op_ = -1;
  std::vector<std::vector<int>> passed_groups_;  // the arguments of each loop's passed_on arrays
  WholeSource src_;
  std::vector<std::vector<Val>> tuples_;  // loop results, by the index recorded in a Val's arg
  std::vector<std::string> arg_exprs_;    // the function's array arguments as the code names them
  std::vector<std::string> handed_;       // a whole graph's results handed out, by output
};

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
  }
  src_.ops.push_back(o.name + " (line " + std::to_string(o.line) + ")");
  for (const std::string& l : c.lines) {
    line(l);
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

void Emitter::hand_out(std::size_t k, const Val& v) {
  std::string why;
  const auto give_up = static_cast<int>(src_.ops.size());
  const std::vector<std::string> lines = hand_out_lines(k, v, arg_exprs_, &handed_, give_up, &why);
  if (!why.empty()) {
    refuse(why);
  }
  src_.ops.emplace_back("result " + std::to_string(k) + ": one array as two results, or no room");
  for (const std::string& text : lines) {
    line(text);
  }
}

void Emitter::carried_array(Val* var, const Val& init) {
  // (its buffer: the input's shape, C-ordered; each step's new array copied into it at the end)
  if (!(init.type == var->type)) {
    refuse("a carried array whose kind changes");
  }
  const std::string& c = var->expr;
  const int rank = var->type.ndim;
  const std::string item = "static_cast<long long>(sizeof(" + var->type.c_type() + "))";
  line("const SotArr* " + c + " = " + init.expr + ";");
  std::string count = "const long long " + c + "_count = 1LL";
  for (int d = 0; d < rank; ++d) {
    count += cat({" * ", init.expr, "->shape[", std::to_string(d), "]"});
  }
  line(count + ";");
  line("char* const " + c + "_buf = sot_alloc(env, " + c + "_count * " + item + ");");
  line("if (" + c + "_buf == nullptr) SOT_GIVE_UP(" + std::to_string(carried_give_up()) + ");");
  const std::string stride = c + "_stride";
  line("long long " + stride + "[" + std::to_string(rank) + "];");
  line(stride + "[" + std::to_string(rank - 1) + "] = " + item + ";");
  for (int d = rank - 2; d >= 0; --d) {
    const std::string next = std::to_string(d + 1);
    line(cat({stride, "[", std::to_string(d), "] = ", stride, "[", next, "] * ", init.expr,
              "->shape[", next, "];"}));
  }
  line("const SotArr " + c + "_view = {" + c + "_buf, " + init.expr + "->shape, " + stride + ", " +
       std::to_string(rank) + "};");
  var->arg = init.arg;  // (its first step's writes are the input's)
  var->c_like = guess_layouts_ && init.laid_c();
  ++arrays_;
  src_.makes_arrays = true;
}

void Emitter::carry_array(const Val& var, const Val& out) {
  if (!out.fresh) {
    refuse("a carried array that is not a new array on each step");
  }
  if (var.c_like && !out.c_order) {
    throw WrongLayoutGuess{};
  }
  const std::string& c = var.expr;
  std::string same = "false";
  for (int d = 0; d < var.type.ndim; ++d) {
    const std::string at = "->shape[" + std::to_string(d) + "]";
    same += cat({" || ", out.expr, at, " != ", c, "_view.shape[", std::to_string(d), "]"});
  }
  line("if (" + same + ") SOT_GIVE_UP(" + std::to_string(carried_give_up()) + ");");
  line("__builtin_memcpy(" + c + "_buf, " + out.expr + "->data, " + c + "_count * sizeof(" +
       var.type.c_type() + "));");
  line(c + " = &" + c + "_view;");
}

std::vector<int> Emitter::passed_on(const std::vector<Val>& vars, const std::vector<Val>& outs,
                                    std::size_t ncarried) {
  std::vector<int> from(vars.size(), -1);
  for (std::size_t k = 0; k < ncarried; ++k) {
    for (std::size_t j = 0; j < ncarried && vars[k].type.kind == Kind::kArray; ++j) {
      if (vars[j].type.kind == Kind::kArray && outs[k].expr == vars[j].expr) {
        from[k] = static_cast<int>(j);
      }
    }
  }
  std::vector<int> args;
  bool made_here = false;  // (one of them starts as an array the code made, not an argument)
  for (std::size_t k = 0; k < ncarried; ++k) {
    if (from[k] >= 0 && from[static_cast<std::size_t>(from[k])] < 0) {
      refuse("a carried array handed on as another that is made anew each step");
    }
    if (from[k] >= 0) {
      made_here = made_here || vars[k].arg < 0;
      args.push_back(vars[k].arg);
    }
  }
  // (a write through one of them may land in any other's array: a write through one that starts
  // as a made array would be neither logged nor restored where another is an argument)
  if (made_here && std::any_of(args.begin(), args.end(), [](int a) { return a >= 0; })) {
    refuse("arrays handed on among themselves, some arguments and some made in the code");
  }
  if (!args.empty() && !made_here) {
    passed_groups_.push_back(args);
  }
  return from;
}

void Emitter::mark_passed_groups_written() {
  for (const std::vector<int>& group : passed_groups_) {
    const bool written = std::any_of(group.begin(), group.end(), [this](int a) {
      return std::find(src_.written.begin(), src_.written.end(), a) != src_.written.end();
    });
    for (const int a : written ? group : std::vector<int>{}) {
      src_.written.push_back(a);
    }
  }
}

int Emitter::carried_give_up() {
  if (carried_op_ < 0) {
    carried_op_ = static_cast<int>(src_.ops.size());
    src_.ops.emplace_back("a carried array of another shape, or no room for it");
  }
  return carried_op_;
}

void Emitter::cond(Scope& s, const CondSpec& spec, const std::vector<Val>& args, int result) {
  if (args.empty() || !args[0].type.number()) {
    refuse("a cond op whose test is an array");
  }
  const std::vector<Val> vars =
      output_vars(spec.body[0], spec.outputs[0], spec.outputs[0].size(), 0, "cond op", {});
  for (const Val& v : vars) {
    line(v.type.c_type() + " " + v.expr + "{};");
  }
  for (std::size_t way = 0; way < 2; ++way) {
    line(way == 0 ? "if (static_cast<bool>(" + args[0].expr + ")) {" : "} else {");
    ++indent_;
    std::vector<Val> inputs;
    for (const int k : spec.args[way]) {
      inputs.push_back(args.at(static_cast<std::size_t>(k) + 1));
    }
    const std::vector<Val> outs = body(spec.body[way], inputs, spec.outputs[way]);
    for (std::size_t k = 0; k < vars.size(); ++k) {
      line(vars[k].expr + " = " + outs[k].expr + ";");
    }
    --indent_;
  }
  line("}");
  tuples_.push_back(vars);
  bind(s, result, Val{"", WType{}, static_cast<int>(tuples_.size() - 1)});
}

void Emitter::step_outputs(std::vector<Val>* vars, const std::vector<Val>& outs,
                           const std::vector<int>& from, const std::vector<Val>& args) {
  // The step's outputs first (a swap reads the old values), then the carried and last values.
  std::vector<std::string> next;
  for (std::size_t k = 0; k < vars->size(); ++k) {
    Val& var = (*vars)[k];
    const std::string n = fresh("t");
    var.passed_on = from[k] >= 0;
    if (var.handed_out) {
      hand_out(k, outs[k]);
    } else if (var.passed_on) {
      line("const SotArr* const " + n + " = " + outs[k].expr + ";");
    } else if (!var.absent && var.type.kind != Kind::kArray) {
      line("const " + var.type.c_type() + " " + n + " = " + outs[k].expr + ";");
    }
    next.push_back(n);
  }
  // (arrays handed on among themselves - a, b = b, a - are whole where all carried ones start so)
  bool whole = true;
  for (std::size_t k = 0; k < vars->size(); ++k) {
    const Val& var = (*vars)[k];
    if (var.type.kind == Kind::kArray && !var.absent && !var.handed_out) {
      whole = whole && (args.at(k).whole || args.at(k).fresh);
    }
  }
  for (std::size_t k = 0; k < vars->size(); ++k) {
    Val& var = (*vars)[k];
    if (var.absent || var.handed_out) {
      continue;
    }
    var.whole = var.whole || (var.passed_on && whole);
    if (var.type.kind == Kind::kArray && !var.passed_on) {
      // (after the loop: the array it starts as, or the buffer's copy of a new one)
      var.whole = args.at(k).whole || args.at(k).fresh;
      var.c_order = var.c_like && args.at(k).c_order;  // (then each step's is: carry_array)
      carry_array(var, outs[k]);
    } else {
      line(var.expr + " = " + next[k] + ";");
    }
  }
}

void Emitter::loop(Scope& s, const LoopSpec& spec, const std::vector<Val>& args, int result) {
  const bool is_while = spec.trips < 0;
  const std::size_t ntests = spec.entry_go_on_if.size();
  const std::size_t nvalues = spec.outputs.size() - spec.step_go_on_if.size();
  // (a range known where it runs: its start and stop are the op's last arguments)
  const std::size_t nargs = args.size() - ntests - (spec.runtime_bounds ? 2 : 0);
  // The carried values as variables, the last values declared before the loop.
  std::vector<Val> vars =
      output_vars(spec.body, spec.outputs, nvalues, spec.ncarried,
                  spec.whole_graph ? "graph" : "loop", spec.unread, spec.whole_graph);
  for (std::size_t k = 0; k < nvalues; ++k) {
    if (vars[k].absent || vars[k].handed_out) {
      continue;
    }
    if (vars[k].type.kind == Kind::kArray) {
      carried_array(&vars[k], args.at(k));
      continue;
    }
    const std::string init = k < spec.ncarried ? " = " + args.at(k).expr : "{}";
    line(vars[k].type.c_type() + " " + vars[k].expr + init + ";");
  }
  const std::string go = fresh("go");
  std::string test = "true";
  for (std::size_t k = 0; k < ntests; ++k) {
    test += std::string(" && ") + (spec.entry_go_on_if[k] ? "" : "!") + "static_cast<bool>(" +
            args[nargs + k].expr + ")";
  }
  line("bool " + go + " = " + test + ";");
  const std::string step = fresh("k");
  std::string trips = std::to_string(spec.trips) + "LL";
  std::string first = std::to_string(spec.start) + "LL";
  if (spec.runtime_bounds) {
    // (stop above start: (stop - start - 1) / step + 1 steps, computed unsigned: exact)
    const std::string& a = args.at(nargs).expr;
    const std::string& b = args.at(nargs + 1).expr;
    trips = fresh("n");
    first = a;
    line(cat({"const long long ", trips, " = ", b, " <= ", a,
              " ? 0LL : static_cast<long long>((static_cast<unsigned long long>(", b,
              ") - static_cast<unsigned long long>(", a, ") - 1ULL) / ", std::to_string(spec.step),
              "ULL) + 1LL;"}));
  }
  // (a while loop runs while its tests go on; a `for` loop to its trips, or its exit test)
  const std::string more =
      is_while ? "" : (spec.step_go_on_if.empty() ? "" : go + " && ") + step + " < " + trips;
  line("for (long long " + step + " = 0; " + (is_while ? go : more) + "; ++" + step + ") {");
  ++indent_;
  line("if (--env_tick < 0) { env_tick = 65536; if (env->signals() < 0) return 2; }");
  // (the step's lines apart, to release the arrays it makes at its end)
  std::ostringstream head;
  head.swap(out_);
  const int arrays_before = arrays_;
  // The body's inputs: carried, the loop variable and the counter, then the op's other arguments.
  std::vector<Val> inputs;
  std::size_t next_arg = spec.ncarried;
  for (std::size_t j = 0; j < spec.body.inputs().size(); ++j) {
    if (j < spec.ncarried) {
      inputs.push_back(vars[j]);
    } else if (static_cast<int>(j) == spec.index_input ||
               static_cast<int>(j) == spec.counter_input) {
      const bool index = static_cast<int>(j) == spec.index_input;
      const std::string name = fresh(index ? "i" : "n");
      const std::string from = index ? first : std::to_string(spec.counter_start) + "LL";
      const std::int64_t by = index ? spec.step : 1;
      // (every value is a 64-bit int: the capture checked the range)
      line(cat(
          {"const long long ", name, " = ", from, " + ", std::to_string(by), "LL * ", step, ";"}));
      WType t;
      t.kind = Kind::kPyInt;
      inputs.push_back(Val{name, t, -1});
    } else {
      inputs.push_back(args.at(next_arg++));
    }
  }
  const std::vector<Val> outs = body(spec.body, inputs, spec.outputs);
  const std::vector<int> from = passed_on(vars, outs, spec.ncarried);
  step_outputs(&vars, outs, from, args);
  if (!spec.step_go_on_if.empty()) {
    std::string again = "true";
    for (std::size_t k = 0; k < spec.step_go_on_if.size(); ++k) {
      again += std::string(" && ") + (spec.step_go_on_if[k] ? "" : "!") + "static_cast<bool>(" +
               outs[nvalues + k].expr + ")";
    }
    line(go + " = " + again + ";");
  }
  const std::string step_text = out_.str();
  out_.swap(head);
  const std::string mark = arrays_ > arrays_before ? fresh("m") : "";
  if (!mark.empty()) {
    line("const SotMark " + mark + " = sot_mark(env);");
  }
  out_ << step_text;
  if (!mark.empty()) {
    line("sot_release(env, " + mark + ");");
  }
  --indent_;
  line("}");
  tuples_.push_back(vars);
  WType tuple;
  Val t{"", tuple, static_cast<int>(tuples_.size() - 1)};
  bind(s, result, t);
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

}  // namespace

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
