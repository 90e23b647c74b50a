// The one list of elementwise ops (graph/rules/op_list.hpp) against the backends' overrides: every
// op has a form in each backend or a stated refusal, no backend names an op the list lacks, and the
// translator captures exactly the ops the list marks captured.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graph/backends/cpu/cpp_emitter.hpp"
#include "graph/backends/cuda/cuda_overrides.hpp"
#include "graph/rules/op_list.hpp"

namespace sot::graph {
namespace {

TEST(OpList, NamesAreDistinctAndArityIsOneToThree) {
  std::set<std::string> seen;
  for (const OpDef& op : op_list()) {
    EXPECT_TRUE(seen.insert(op.name).second) << op.name;
    EXPECT_GE(op.nin, 1) << op.name;
    EXPECT_LE(op.nin, 3) << op.name;
    EXPECT_EQ(find_op(op.name), &op);
  }
  EXPECT_EQ(find_op("no_such_op"), nullptr);
}

TEST(OpList, EveryOpHasAFormOrAStatedRefusalInEachBackend) {
  for (const OpDef& op : op_list()) {
    const std::string cpu = cpp_form(op.name);
    EXPECT_FALSE(cpu.empty()) << op.name << ": no tier B form";
    const std::string cuda = cuda_form(op.name);
    EXPECT_FALSE(cuda.empty()) << op.name << ": no CUDA form and no stated refusal";
    if (cuda.rfind("refused: ", 0) == 0) {
      EXPECT_GT(cuda.size(), std::string("refused: ").size() + 10)
          << op.name << ": a refusal says why";
    }
  }
}

TEST(OpList, TheExactOpsTierBWritesItselfAreExact) {
  // Tier B writes an op inline only where the result is eager NumPy's bit for bit by construction.
  for (const OpDef& op : op_list()) {
    if (cpp_form(op.name).rfind("inline: ", 0) == 0) {
      EXPECT_NE(op.exactness, Exactness::kLibm) << op.name;
      EXPECT_NE(op.exactness, Exactness::kIntegerOp) << op.name;
    }
  }
}

TEST(OpList, BackendsNameNoOpTheListLacks) {
  for (const std::string& name : cpp_override_names()) {
    EXPECT_NE(find_op(name), nullptr) << "tier B writes " << name << ", which the op list lacks";
  }
  for (const std::string& name : cuda_override_names()) {
    EXPECT_NE(find_op(name), nullptr)
        << "the CUDA emitter writes " << name << ", which the op list lacks";
  }
  EXPECT_GT(cpp_override_names().size(), 10U);
  EXPECT_GT(cuda_override_names().size(), 50U);
  for (const char* name : {"frobnicate", "matmul", "sum"}) {
    EXPECT_EQ(cpp_form(name), "") << name;
    EXPECT_EQ(cuda_form(name), "") << name;
  }
}

TEST(OpList, ExactnessHasNames) {
  EXPECT_STREQ(exactness_name(Exactness::kExact), "exact");
  EXPECT_STREQ(exactness_name(Exactness::kLibm), "libm");
}

}  // namespace
}  // namespace sot::graph
