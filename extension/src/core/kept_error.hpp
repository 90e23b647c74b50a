// A copy of the Python error set, kept to be set again later: a step stopped once stays stopped,
// with the same error, however often it tries again (a caller may have swallowed the first).
#pragma once

#include <Python.h>

namespace sot {

class KeptError {
 public:
  KeptError() = default;
  ~KeptError() { clear(); }
  KeptError(const KeptError&) = delete;
  KeptError& operator=(const KeptError&) = delete;
  KeptError(KeptError&&) = delete;
  KeptError& operator=(KeptError&&) = delete;

  // Keeps a copy of the error set (which stays set).
  void keep();
  // Sets the error kept again; where none was kept, a RuntimeError saying `otherwise`.
  void restore(const char* otherwise) const;
  void clear();

 private:
  PyObject* type_ = nullptr;
  PyObject* value_ = nullptr;
  PyObject* trace_ = nullptr;
};

}  // namespace sot
