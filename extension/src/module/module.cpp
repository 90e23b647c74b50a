// The `sot._sot` extension module: the Python face of the C++ core. Each part of the core adds its
// bindings here through a `bind_*` function of its own as it lands.
#include <pybind11/pybind11.h>

#include "core/build_info.hpp"
#include "module/bindings.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_sot, m) {
  m.doc() = "xeus-sot C++ core";
  if (!sot::core::runtime_matches_build()) {
    throw py::import_error("sot._sot was built for Python " +
                           sot::core::build_info().python_version +
                           ", but a different Python is importing it");
  }
  m.def(
      "build_info",
      []() {
        const sot::core::BuildInfo info = sot::core::build_info();
        py::dict d;
        d["sot_version"] = info.sot_version;
        d["python_version"] = info.python_version;
        d["python_hex"] = info.python_hex;
        d["compiler"] = info.compiler;
        d["sanitized"] = info.sanitized;
        return d;
      },
      "Versions and options this core was built with.");
  m.attr("__version__") = SOT_VERSION;
  sot::module::bind_bytecode(m);
  sot::module::bind_capture(m);
  sot::module::bind_translator(m);
  sot::module::bind_graph(m);
}
