// Tier C's control flow (whole_emitter_class.hpp): a loop op as a C++ loop (its carried values,
// the arrays among them in buffers of their own, its exit tests), a cond op as an `if`, and a whole
// graph's array results handed out.
#include <algorithm>
#include <array>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "graph/backends/cpu/whole/whole_emitter_class.hpp"

namespace sot::graph::whole {

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
  // (a new array each step; or a cond op's that is one, or else the carried array as it was)
  const bool kept = !out.fresh && out.fresh_or == var.expr;
  if (!out.fresh && !kept) {
    refuse("a carried array that is not a new array on each step");
  }
  if (var.c_like && !out.c_order) {
    throw WrongLayoutGuess{};
  }
  const std::string& c = var.expr;
  if (kept) {  // (as it was: the input itself, or the buffer, left as it is)
    line("if (" + out.expr + " != " + c + ") {");
    ++indent_;
  }
  std::string same = "false";
  for (int d = 0; d < var.type.ndim; ++d) {
    const std::string at = "->shape[" + std::to_string(d) + "]";
    same += cat({" || ", out.expr, at, " != ", c, "_view.shape[", std::to_string(d), "]"});
  }
  line("if (" + same + ") SOT_GIVE_UP(" + std::to_string(carried_give_up()) + ");");
  line("__builtin_memcpy(" + c + "_buf, " + out.expr + "->data, " + c + "_count * sizeof(" +
       var.type.c_type() + "));");
  line(c + " = &" + c + "_view;");
  if (kept) {
    --indent_;
    line("}");
  }
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
  // Numbers as variables; arrays as pointers to either way's (cond_array says which may be)
  std::vector<Val> vars;
  for (const int o : spec.outputs[0]) {
    std::string why;
    const auto t = type_of(spec.body[0].value(o).info, &why);
    if (!t || (!t->number() && t->ndim < 1)) {
      refuse(t ? "a cond op whose result is a 0-d array" : why);
    }
    vars.push_back(Val{fresh("c"), *t, -1});
    const std::string& e = vars.back().expr;
    if (t->number()) {
      line(t->c_type() + " " + e + "{};");
      continue;
    }
    // (an array a way makes: its description copied out of the way's block, its data in the arena
    // until the step's end)
    const std::string nd = std::to_string(t->ndim);
    line(cat({"long long ", e, "_shape[", nd, "];"}));
    line(cat({"long long ", e, "_strides[", nd, "];"}));
    line(cat({"SotArr ", e, "_own = {nullptr, ", e, "_shape, ", e, "_strides, ", nd, "};"}));
    line("const SotArr* " + e + " = nullptr;");
  }
  std::array<std::vector<Val>, 2> outs;
  for (std::size_t way = 0; way < 2; ++way) {
    line(way == 0 ? "if (static_cast<bool>(" + args[0].expr + ")) {" : "} else {");
    ++indent_;
    std::vector<Val> inputs;
    for (const int k : spec.args[way]) {
      inputs.push_back(args.at(static_cast<std::size_t>(k) + 1));
    }
    outs[way] = body(spec.body[way], inputs, spec.outputs[way]);
    for (std::size_t k = 0; k < vars.size(); ++k) {
      const std::string& e = vars[k].expr;
      const Val& o = outs[way][k];
      if (vars[k].type.kind == Kind::kArray && o.fresh) {
        for (int d = 0; d < vars[k].type.ndim; ++d) {
          const std::string at = "[" + std::to_string(d) + "]";
          line(cat({e, "_shape", at, " = ", o.expr, "->shape", at, "; ", e, "_strides", at, " = ",
                    o.expr, "->strides", at, ";"}));
        }
        line(e + "_own.data = " + o.expr + "->data;");
        line(cat({e, " = &", e, "_own;"}));
      } else {
        const bool outside = std::any_of(inputs.begin(), inputs.end(),
                                         [&](const Val& in) { return in.expr == o.expr; });
        if (vars[k].type.kind == Kind::kArray && !outside) {
          refuse("a cond op whose array result is a view made in one of its ways");
        }
        line(e + " = " + o.expr + ";");  // (a number, or an array from outside the way)
      }
    }
    --indent_;
  }
  line("}");
  for (std::size_t k = 0; k < vars.size(); ++k) {
    if (vars[k].type.kind == Kind::kArray) {
      cond_array(&vars[k], outs[0][k], outs[1][k]);
    }
  }
  tuples_.push_back(vars);
  bind(s, result, Val{"", WType{}, static_cast<int>(tuples_.size() - 1)});
}

void Emitter::cond_array(Val* v, const Val& a, const Val& b) {
  for (const Val* way : {&a, &b}) {
    if (!(way->type == v->type)) {
      refuse("a cond op whose ways' arrays are of other kinds");
    }
    if (way->fresh) {
      continue;
    }
    if (way->expr.empty() || (!v->fresh_or.empty() && v->fresh_or != way->expr)) {
      refuse("a cond op whose array result is not a new array or one array it hands on as it is");
    }
    v->fresh_or = way->expr;  // (`x = x_new` one way, x as it was the other: an exit's step)
    v->arg = way->arg;        // (writes through it may be that argument's)
  }
  v->fresh = a.fresh && b.fresh;
  v->c_order = a.c_order && b.c_order;
  v->c_like = a.laid_c() && b.laid_c();
  v->whole = v->fresh;
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

}  // namespace sot::graph::whole
