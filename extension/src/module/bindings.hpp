// Each part of the core binds itself into the `_sot` module through one function.
#pragma once

#include <pybind11/pybind11.h>

namespace sot::module {

void bind_bytecode(pybind11::module_& m);
void bind_capture(pybind11::module_& m);
void bind_translator(pybind11::module_& m);
void bind_graph(pybind11::module_& m);

}  // namespace sot::module
