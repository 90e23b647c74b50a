// Test helper: an embedded Python interpreter started once per test program (GoogleTest
// environment).
#pragma once

#include <pybind11/embed.h>

namespace sot::test {

// Runs `source` in a fresh namespace and returns that namespace (a dict).
pybind11::dict run_python(const char* source);

}  // namespace sot::test
