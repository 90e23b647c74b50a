// Text for a value in reasons, guard failures and logs that never runs user code: a repr for the
// builtin constant types (whose repr is CPython's own), and for everything else its kind and
// name read from C fields (a user __repr__ with side effects must not run while translating or
// checking guards).
#pragma once

#include <Python.h>

#include <string>

namespace sot::capture {

// At most about `max_length` characters.
std::string describe_value(PyObject* value, std::size_t max_length = 80);

}  // namespace sot::capture
