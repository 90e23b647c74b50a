#include "core/build_info.hpp"

#include <gtest/gtest.h>

#include <string>

#include "python_env.hpp"

namespace py = pybind11;

TEST(BuildInfo, DescribesTheHeadersOfTheRunningPython) {
  const sot::core::BuildInfo info = sot::core::build_info();
  const py::dict ns = sot::test::run_python("import sys\nv = '%d.%d' % sys.version_info[:2]\n");
  const std::string running = ns["v"].cast<std::string>();
  EXPECT_EQ(info.python_version.rfind(running + ".", 0), 0U)
      << info.python_version << " vs " << running;
  EXPECT_TRUE(sot::core::runtime_matches_build());
  EXPECT_EQ(info.sot_version, SOT_VERSION);
  EXPECT_FALSE(info.compiler.empty());
}

TEST(BuildInfo, ModuleReportsTheSameFacts) {
  const py::dict ns = sot::test::run_python("import sot\ninfo = sot.build_info()\n");
  const py::dict info = ns["info"];
  EXPECT_EQ(info["python_version"].cast<std::string>(), sot::core::build_info().python_version);
  EXPECT_EQ(info["sot_version"].cast<std::string>(), SOT_VERSION);
}
