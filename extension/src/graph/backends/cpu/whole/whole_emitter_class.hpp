// Tier C's emitter class (whole_emitter.hpp: emit_loop), shared by its two files: whole_emitter.cpp
// (the function, its values and ops) and whole_control.cpp (loop and cond ops, carried arrays,
// a whole graph's results).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/backends/cpu/whole/whole_emitter.hpp"
#include "graph/exec/cond_op.hpp"

namespace sot::graph::whole {

// A refusal: the reason travels up as the emitter's `why`.
struct Refused {
  std::string why;
};
// A carried array guessed C-ordered whose step makes it otherwise: emitted again without guesses.
struct WrongLayoutGuess {};

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
  static Val constant(const pybind11::handle& c);
  // A slice item of a key: its constant parts, and the values `index` gives for its Ellipsis parts.
  static Val slice(const pybind11::handle& item, const std::function<Val()>& index);
  std::vector<Val> operands(const Scope& s, const Op& op);
  std::vector<Val> shape_operands(const Scope& s, const Op& op);
  static void key_items(const pybind11::handle& key, std::vector<Val>* vals);
  std::size_t at_items(const Scope& s, const Op& op, std::vector<Val>* vals);
  void ops(Scope& s);
  void op(Scope& s, const Op& op);
  // A loop op: its outputs bound as tuple items of `result` (loop_output ops read them).
  void loop(Scope& s, const LoopSpec& spec, const std::vector<Val>& args, int result);
  // A cond op: each way in a branch of an `if` on its test, its outputs bound as loop's are.
  void cond(Scope& s, const CondSpec& spec, const std::vector<Val>& args, int result);
  // A cond op's array output `v` from its ways' `a` and `b`: each a new array, or one array (the
  // same in both, handed on as it is: Val::fresh_or); else refused.
  void cond_array(Val* v, const Val& a, const Val& b);
  // The ops of `g` with its inputs bound to `inputs`: the values of `outputs`.
  std::vector<Val> body(const Graph& g, const std::vector<Val>& inputs,
                        const std::vector<int>& outputs);
  // Number variables for the outputs `outputs` of `g` (a loop's carried and last values).
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

}  // namespace sot::graph::whole
