// Loops over ranges of the graph's ints: `for i in range(j + 1, n):` inside a loop body being
// captured (a triangular nest: j is the outer loop's variable) has a start known only where the
// graph runs. The call of range(...), its GET_ITER and the FOR_ITER are taken as one: the loop is
// captured as a loop op whose bounds are the op's last arguments (graph::LoopSpec::runtime_bounds),
// its body simulated once over a stand-in range from the least start to the greatest stop (the
// loop variable's range, which the body's indices are checked against). Such a loop is made only
// where the backend runs it natively, with nothing read after it that the steps leave (no last
// values, the loop variable read nowhere outside the body): a range of no steps then changes
// nothing. Anything else puts the run back at the call, which breaks the graph there - never an
// unrolled stand-in range.
#include <optional>
#include <string>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "bytecode/operands.hpp"
#include "graph/exec/backend.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

std::string name_at(const bytecode::Bytecode& code, std::size_t k) {
  const auto& ins = code.instructions();
  return k < ins.size() ? std::string(bytecode::opcode_info(ins[k].opcode).name) : "";
}

}  // namespace

bool OpcodeExecutor::runtime_range_loop(const CallSite& site) {
  const graph::Backend* backend = graph::find_backend(shared_->backend);
  const bool in_body =
      shared_->loop_depth > 0 && shared_->arrays && backend != nullptr && backend->compiles_loops();
  if (!in_body || site.callable->kind() != Variable::Kind::kObject ||
      site.callable->value().ptr() != reinterpret_cast<PyObject*>(&PyRange_Type) || site.nkw != 0 ||
      site.args.empty() || site.args.size() > 2 || name_at(code_, pc_ + 1) != "GET_ITER" ||
      name_at(code_, pc_ + 2) != "FOR_ITER") {
    return false;
  }
  // range(stop) or range(start, stop), each a Python int constant or one of the graph whose range
  // is known; at least one of the graph.
  const bool two = site.args.size() == 2;
  std::vector<int> ids;
  std::vector<ArrayState::LoopIndex> ranges;
  bool made = false;
  for (const VarPtr& v : site.args) {
    const NumberOperand n = number_operand(v);
    if (n.kind != 'i') {
      return false;
    }
    if (n.id >= 0) {
      const auto r = arrays().int_range(n.id);
      if (!r) {
        return false;
      }
      ranges.push_back(*r);
      made = true;
    } else {
      const std::int64_t c = n.constant->value().cast<std::int64_t>();
      ranges.push_back({c, c});
    }
    ids.push_back(-1);
  }
  if (!made) {
    return false;
  }
  const ArrayState::LoopIndex start = two ? ranges[0] : ArrayState::LoopIndex{0, 0};
  const ArrayState::LoopIndex stop = ranges.back();
  if (stop.hi <= start.lo || stop.hi - start.lo < 2) {
    return false;  // (a stand-in range of fewer than two items)
  }
  // What the run looks like at the call, to put back when the loop is not one op.
  const std::vector<VarPtr> locals = locals_;
  const std::vector<VarPtr> stack = stack_;
  const Mark at_call = mark();
  const std::size_t call_pc = pc_;
  const bool group = in_group_;
  const std::size_t group_first = group_first_;
  bool ok = false;
  try {
    for (std::size_t k = 0; k < site.args.size(); ++k) {
      ids[k] = number_value(number_operand(site.args[k]));
    }
    RuntimeRange r;
    r.range = py::reinterpret_steal<py::object>(
        PyObject_CallFunction(reinterpret_cast<PyObject*>(&PyRange_Type), "LL",
                              static_cast<long long>(start.lo), static_cast<long long>(stop.hi)));
    if (!r.range) {
      PyErr_Clear();
      throw Stop{};
    }
    NumberOperand zero;
    zero.kind = 'i';
    zero.constant = Variable::constant(py::int_(0));
    r.start = two ? ids[0] : number_value(zero);
    r.stop = ids.back();
    replace_call(site, Variable::constant(r.range));
    in_group_ = false;
    pc_ = call_pc + 1;
    next_ = pc_ + 1;
    step(code_.instructions()[pc_]);  // GET_ITER
    pc_ = call_pc + 2;
    next_ = pc_ + 1;
    runtime_range_ = r;
    const bytecode::Instruction& for_iter = code_.instructions()[pc_];
    const VarPtr it = peek(1);
    ok = capture_loop(for_iter, it);
    runtime_range_.reset();
    if (ok) {
      remember(it);
      it->set_position(-1);
      pop();
      next_ = code_.index_of(for_iter.target) + bytecode::operand::for_iter_exit_skip();
    }
  } catch (const Stop&) {
    runtime_range_.reset();
    ok = false;
  }
  if (ok) {
    return true;
  }
  rollback(at_call);
  locals_ = locals;
  stack_ = stack;
  pc_ = call_pc;
  next_ = pc_ + 1;
  in_group_ = group;
  group_first_ = group_first;
  clear_result();
  graph_break(
      "a range of Python ints made in the graph that is not a native loop op (its steps known only "
      "where the graph runs)");
}

bool OpcodeExecutor::runtime_loop_ok(const LoopSite& site) {
  // (a range of no steps hands on what came in: no last values; the loop variable then keeps its
  // old value, so no instruction outside the body may read it)
  if (site.start_value < 0) {
    return true;
  }
  if (!site.last.empty() || !site.last_constants.empty() || site.counter >= 0 || site.rows ||
      site.is_while) {
    return false;
  }
  if (!never_read(site.var, site.for_pc, site.exit)) {
    return false;
  }
  graph::Backend* backend = graph::find_backend(shared_->backend);
  std::string why;
  return backend != nullptr && backend->native_loop(build_loop(site).spec, &why);
}

}  // namespace sot::translator
