// BINARY_OP's operators, one table shared by constant folding (handlers_operators.cpp) and array
// capture (array_operators.cpp): each operator's symbol, its PyNumber function, the NumPy ufunc it
// calls on arrays (and that ufunc's kind for the rules), and its `operator` module functions.
#pragma once

#include <Python.h>

#include "graph/rules/rules.hpp"

namespace sot::translator {

struct BinaryOperator {
  int base;                                   // 0-12: NB_ADD ... NB_XOR (the in-place form adds 13)
  const char* symbol;                         // "+"
  PyObject* (*number)(PyObject*, PyObject*);  // PyNumber_Add (** calls PyNumber_Power with None)
  const char* ufunc;                          // "add"
  graph::UfuncKind kind;                      // the ufunc's kind in the rules
  const char* function;                       // operator.add
  const char* inplace;                        // operator.iadd
};

// The operator of BINARY_OP's argument (0-12, or 13-25 for the in-place forms), or nullptr.
const BinaryOperator* binary_operator(int oparg);
// Whether BINARY_OP's argument is an in-place form (+=, ...).
inline bool binary_inplace(int oparg) {
  return oparg >= 13;
}

}  // namespace sot::translator
