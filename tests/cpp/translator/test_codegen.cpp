// Code generation on small code objects: the code for a frame that returns, and for a graph
// break (the state rebuilt, the breaking instruction run for real, a resume function called),
// each run in the embedded interpreter against the original function.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "frame_inputs.hpp"
#include "python_env.hpp"
#include "translator/codegen/codegen.hpp"
#include "translator/guards/guards.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;
namespace tr = sot::translator;

namespace {

struct Generated {
  tr::GuardSet guards;
  sot::bytecode::Bytecode code;
  tr::FrameInputs inputs;
  tr::SimulationResult result;
  py::dict resumes;
  py::object transformed;
  std::size_t resume_count = 0;

  Generated(const py::object& fn, const std::vector<py::object>& args)
      : code(sot::bytecode::Bytecode::decode(fn.attr("__code__").ptr())),
        inputs(sot::test::frame_inputs(fn, args)) {
    tr::OpcodeExecutor executor(code, inputs, &guards);
    result = executor.run();
    tr::CodeGen gen(code, resumes, &guards);
    transformed = result.kind == tr::SimulationResult::Kind::kReturn ? gen.for_return(result)
                                                                     : gen.for_break(result);
    resume_count = gen.resumes().size();
  }

  // The transformed code run as the function's code, with `args`.
  py::object call(const py::object& fn, const py::tuple& args) const {
    const py::object types = py::module_::import("types");
    const py::object f =
        types.attr("FunctionType")(transformed, fn.attr("__globals__"), fn.attr("__name__"),
                                   fn.attr("__defaults__"), fn.attr("__closure__"));
    return f(*args);
  }
};

}  // namespace

TEST(Codegen, AReturnRebuildsTheReturnedValue) {
  const py::dict ns = sot::test::run_python(
      "def f(a, b):\n"
      "    t = [a, b, a + b]\n"
      "    return t, {'sum': t[2]}\n");
  Generated g(ns["f"], {py::int_(2), py::int_(5)});
  ASSERT_EQ(g.result.kind, tr::SimulationResult::Kind::kReturn) << g.result.reason;
  EXPECT_EQ(g.resume_count, 0U);
  const py::object value = g.call(ns["f"], py::make_tuple(2, 5));
  EXPECT_TRUE(value.equal(ns["f"](2, 5)));
  EXPECT_NE(PyObject_Hash(g.transformed.ptr()), -1);
}

TEST(Codegen, ABreakRunsTheInstructionAndResumes) {
  const py::dict ns = sot::test::run_python(
      "seen = []\n"
      "def f(x, items):\n"
      "    y = x * 3\n"
      "    items.append(y)\n"
      "    seen.append(len(items))\n"
      "    z = [y, x]\n"
      "    return z, sum(items)\n");
  // (items is received from outside: the append changes its model, replayed before the break)
  const py::list items_gen;
  Generated g(ns["f"], {py::int_(4), items_gen});
  ASSERT_EQ(g.result.kind, tr::SimulationResult::Kind::kBreak);
  EXPECT_GE(g.resume_count, 1U);
  py::list plain_items;
  const py::object plain = ns["f"](4, plain_items);
  py::list gen_items;
  const py::object generated = g.call(ns["f"], py::make_tuple(4, gen_items));
  EXPECT_TRUE(generated.equal(plain));
  EXPECT_TRUE(gen_items.equal(plain_items));
  const py::list seen = ns["seen"];
  ASSERT_EQ(py::len(seen), 2U);  // the plain call's and the generated one's
  EXPECT_TRUE(py::object(seen[0]).equal(seen[1]));
  // The resume function says what it resumes.
  for (const auto& item : g.resumes) {
    const py::object info = tr::resume_info(item.second.ptr());
    ASSERT_FALSE(info.is_none());
    EXPECT_TRUE(py::object(py::tuple(info)[0]).is(ns["f"].attr("__code__")));
  }
}
