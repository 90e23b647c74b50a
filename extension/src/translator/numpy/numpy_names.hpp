// Which NumPy callables the translator captures, and how it names them (numpy_names.cpp). The ufunc
// table and index keys are declared with the array state (array_state.hpp: find_ufunc,
// index_items), which most of the NumPy capture includes.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <string>

namespace sot::translator {

// operator.<name> (operator.add, operator.getitem, ...), the callable an operator's op runs.
pybind11::object operator_fn(const char* name);
// True when <ufunc>.<name>() (outer, reduce, accumulate) is captured.
bool captured_ufunc_method(const std::string& name);
// True when ndarray.<name>() is captured.
bool captured_method(const std::string& name);
// The NumPy callables this process's numpy has, by identity -> canonical name.
const std::map<PyObject*, std::string>& numpy_table(const pybind11::object& np);
// CuPy's callables that stand for NumPy's (cupy.<path> of each callable of numpy_table), by
// identity: the canonical name and NumPy's callable (borrowed: the numpy module keeps it). Empty
// where cupy is not imported.
struct CupyEntry {
  std::string name;
  PyObject* numpy_fn = nullptr;
};
const std::map<PyObject*, CupyEntry>& cupy_table(const pybind11::object& np);
// "np.random.rand", "np.linalg.norm": how a NumPy callable is named in reasons; empty when the
// callable is not NumPy's.
std::string numpy_name(const pybind11::handle& fn);

}  // namespace sot::translator
