#include "python_env.hpp"

#include <gtest/gtest.h>

namespace py = pybind11;

namespace {

class PythonEnvironment final : public ::testing::Environment {
 public:
  void SetUp() override {
    py::initialize_interpreter();
    py::module_::import("sys").attr("path").attr("insert")(0, SOT_TEST_PYTHON_DIR);
    // The kernel environment's packages (NumPy), as the kernel has them.
    py::module_::import("site").attr("addsitedir")(SOT_TEST_SITE_PACKAGES);
  }
  void TearDown() override { py::finalize_interpreter(); }
};

// Registered before main() runs; GoogleTest owns and deletes it.
const ::testing::Environment* const kPythonEnvironment = ::testing::AddGlobalTestEnvironment(
    new PythonEnvironment);  // NOLINT(cppcoreguidelines-owning-memory)

}  // namespace

namespace sot::test {

py::dict run_python(const char* source) {
  py::dict ns;
  ns["__builtins__"] = py::module_::import("builtins");
  py::exec(source, ns);
  return ns;
}

}  // namespace sot::test
