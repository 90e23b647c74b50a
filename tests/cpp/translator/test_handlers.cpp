// The opcode executor on small code objects, one family of handlers at a time: what a simulation
// returns (folded values, the Variables of inputs), where it breaks and why, the side effects it
// records, inlined calls, and the handler table itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/opcode_table.hpp"
#include "frame_inputs.hpp"
#include "python_env.hpp"
#include "translator/guards/guards.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;
namespace tr = sot::translator;

namespace {

// Simulates ns[name] called with `args` (its positional parameters, in order).
struct Simulation {
  tr::GuardSet guards;
  sot::bytecode::Bytecode code;
  tr::FrameInputs inputs;
  tr::SimulationResult result;

  Simulation(const py::dict& ns, const char* name, const std::vector<py::object>& args)
      : code(sot::bytecode::Bytecode::decode(ns[name].attr("__code__").ptr())),
        inputs(sot::test::frame_inputs(ns[name], args)) {
    tr::OpcodeExecutor executor(code, inputs, &guards);
    result = executor.run();
  }
};

using Kind = tr::SimulationResult::Kind;

}  // namespace

TEST(Handlers, OperatorsOnConstantsFold) {
  const py::dict ns = sot::test::run_python(
      "def f(a, b):\n"
      "    c = a * b + 1\n"
      "    return -c if c > 10 else c\n");
  Simulation s(ns, "f", {py::int_(3), py::int_(4)});
  ASSERT_EQ(s.result.kind, Kind::kReturn) << s.result.reason;
  EXPECT_TRUE(s.result.value->value().equal(ns["f"](3, 4)));  // as the plain call: -13
  EXPECT_GE(s.result.folded, 3U);
}

TEST(Handlers, BuiltContainersKeepTheirItemsVariables) {
  const py::dict ns = sot::test::run_python(
      "def f(x, y):\n"
      "    t = (x, [y, x], {'k': y})\n"
      "    a, b, c = t\n"
      "    return b[1], c['k'], t[0]\n");
  const py::object x = py::module_::import("builtins").attr("object")();
  const py::object y = py::module_::import("builtins").attr("object")();
  Simulation s(ns, "f", {x, y});
  ASSERT_EQ(s.result.kind, Kind::kReturn) << s.result.reason;
  const auto& items = s.result.value->items();
  ASSERT_EQ(items.size(), 3U);
  EXPECT_EQ(items[0], s.result.entry_locals[0]);  // b[1] is x itself
  EXPECT_EQ(items[1], s.result.entry_locals[1]);
  EXPECT_EQ(items[2], s.result.entry_locals[0]);
}

TEST(Handlers, AnOpcodeWithoutAHandlerBreaksWithItsName) {
  const py::dict ns = sot::test::run_python(
      "def f():\n"
      "    raise\n");
  Simulation s(ns, "f", {});
  ASSERT_EQ(s.result.kind, Kind::kBreak);
  EXPECT_NE(s.result.reason.find("RAISE_VARARGS"), std::string::npos) << s.result.reason;
  EXPECT_EQ(s.result.lineno, ns["f"].attr("__code__").attr("co_firstlineno").cast<int>() + 1);
}

TEST(Handlers, ABranchOnAnUnknownValueBreaks) {
  const py::dict ns = sot::test::run_python(
      "def f(x):\n"
      "    if x:\n"
      "        return 1\n"
      "    return 2\n");
  Simulation s(ns, "f", {py::module_::import("builtins").attr("object")()});
  ASSERT_EQ(s.result.kind, Kind::kBreak);
  EXPECT_NE(s.result.reason.find("truth"), std::string::npos) << s.result.reason;
}

TEST(Handlers, GlobalStoresAndCellWritesAreRecordedSideEffects) {
  const py::dict ns = sot::test::run_python(
      "G = 0\n"
      "def f(v):\n"
      "    global G\n"
      "    G = v + 1\n"
      "    n = 0\n"
      "    def bump():\n"
      "        nonlocal n\n"
      "        n = n + 1\n"
      "    bump()\n"
      "    return G, n\n");
  Simulation s(ns, "f", {py::int_(41)});
  ASSERT_EQ(s.result.kind, Kind::kReturn) << s.result.reason;
  ASSERT_EQ(s.result.effects.global_stores.size(), 1U);
  EXPECT_EQ(s.result.effects.global_stores[0].first.cast<std::string>(), "G");
  EXPECT_EQ(s.result.effects.global_stores[0].second->value().cast<int>(), 42);
  ASSERT_EQ(s.result.effects.cells.size(), 1U);  // n, written by the inlined bump()
  EXPECT_EQ(s.result.effects.cells[0]->contents()->value().cast<int>(), 1);
  EXPECT_EQ(s.result.value->items()[1]->value().cast<int>(), 1);
}

TEST(Handlers, UserFunctionsAreInlined) {
  const py::dict ns = sot::test::run_python(
      "def double(x, k=2):\n"
      "    return x * k\n"
      "def f(a):\n"
      "    return double(a) + double(a, k=3)\n");
  Simulation s(ns, "f", {py::int_(5)});
  ASSERT_EQ(s.result.kind, Kind::kReturn) << s.result.reason;
  EXPECT_TRUE(s.result.value->value().equal(ns["f"](5)));  // as the plain call: 25
}

TEST(Handlers, AnInlinedCallThatBreaksIsUndone) {
  const py::dict ns = sot::test::run_python(
      "def g(xs):\n"
      "    xs.append(1)\n"
      "    import sot_test_no_such_module\n"
      "    return xs\n"
      "def f():\n"
      "    xs = []\n"
      "    g(xs)\n"
      "    return xs\n");
  Simulation s(ns, "f", {});
  ASSERT_EQ(s.result.kind, Kind::kBreak);
  EXPECT_NE(s.result.reason.find("not inlined"), std::string::npos) << s.result.reason;
  // The list built in f is as it was before the call (the append was rolled back).
  bool found = false;
  for (const tr::VarPtr& v : s.result.state.locals) {
    if (v && v->kind() == tr::Variable::Kind::kList) {
      EXPECT_TRUE(v->items().empty());
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Handlers, BuiltinsOnTheStructureOfValues) {
  const py::dict ns = sot::test::run_python(
      "def f(a, b):\n"
      "    pairs = list(zip([a, b], (1, 2)))\n"
      "    return len(pairs), sorted([3, 1, 2]), isinstance(a, int), [i for i, _ in "
      "enumerate(pairs)]\n");
  Simulation s(ns, "f", {py::int_(7), py::int_(8)});
  ASSERT_EQ(s.result.kind, Kind::kReturn) << s.result.reason;
  const auto& items = s.result.value->items();
  ASSERT_EQ(items.size(), 4U);
  EXPECT_EQ(items[0]->value().cast<int>(), 2);
  ASSERT_EQ(items[1]->items().size(), 3U);
  EXPECT_EQ(items[1]->items()[0]->value().cast<int>(), 1);
  EXPECT_TRUE(items[2]->value().cast<bool>());
  EXPECT_EQ(items[3]->items().size(), 2U);
}

TEST(Handlers, TheTableCoversEveryOpcodeItNames) {
  const std::vector<std::string> names = tr::simulated_opcode_names();
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("LOAD_FAST"));
  EXPECT_TRUE(has("CALL"));
  EXPECT_TRUE(has("BINARY_OP"));
  EXPECT_TRUE(has("FOR_ITER"));
  EXPECT_TRUE(has("IMPORT_NAME"));
  EXPECT_FALSE(has("RAISE_VARARGS"));
  for (const std::string& n : names) {
    EXPECT_GE(sot::bytecode::opcode_by_name(n), 0) << n;
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), "LOAD_FAST"), 1);
}
