// `_sot.translator`: the symbolic opcode translator (a capture-runtime Translator) and what its
// translations did.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "capture/translator.hpp"
#include "module/bindings.hpp"
#include "translator/opcode_executor.hpp"
#include "translator/symbolic_translator.hpp"

namespace py = pybind11;

namespace sot::module {

namespace {

// A record class read like a mapping too (r["breaks"] is r.breaks): keys(), __getitem__,
// __contains__ and to_dict() over its fields, so that dict(record) and the code written against
// the earlier dicts keep working.
template <typename C>
void mapping_protocol(py::class_<C>& cls, std::vector<const char*> fields) {
  cls.def("keys", [fields](const py::object&) {
    py::list out;
    for (const char* f : fields) {
      out.append(f);
    }
    return out;
  });
  cls.def("__getitem__", [fields](const py::object& self, const std::string& key) -> py::object {
    for (const char* f : fields) {
      if (key == f) {
        return self.attr(f);
      }
    }
    throw py::key_error(key);
  });
  cls.def("__contains__", [fields](const py::object&, const std::string& key) {
    for (const char* f : fields) {
      if (key == f) {
        return true;
      }
    }
    return false;
  });
  cls.def("to_dict", [fields](const py::object& self) {
    py::dict d;
    for (const char* f : fields) {
      d[f] = self.attr(f);
    }
    return d;
  });
}

void bind_records(py::module_& m) {
  using R = translator::TranslationRecord;
  using B = translator::BreakRecord;
  using F = translator::ResumeFunction;
  using G = translator::GraphRecord;
  py::class_<B> br(m, "BreakRecord",
                   "A graph break: why, where, and whether the frame went on in place.");
  br.def_readonly("reason", &B::reason)
      .def_readonly("filename", &B::filename)
      .def_readonly("lineno", &B::lineno)
      .def_readonly("offset", &B::offset)
      .def_readonly("in_place", &B::in_place)
      .def("__repr__", [](const B& b) {
        return "<BreakRecord " + b.filename + ":" + std::to_string(b.lineno) + ": " + b.reason +
               ">";
      });
  mapping_protocol(br, {"reason", "filename", "lineno", "offset", "in_place"});
  py::class_<F> rf(m, "ResumeRecord", "A resume function a break calls.");
  rf.def_readonly("code", &F::code)
      .def_readonly("offset", &F::offset)
      .def_readonly("stack", &F::stack)
      .def_readonly("live", &F::live);
  mapping_protocol(rf, {"code", "offset", "stack", "live"});
  py::class_<G> gr(m, "GraphRecord", "A captured graph the transformed code calls.");
  gr.def_readonly("compiled", &G::compiled)
      .def_readonly("text", &G::text)
      .def_readonly("json", &G::json)
      .def_readonly("op_counts", &G::op_counts)
      .def_readonly("ops", &G::ops)
      .def_readonly("inputs", &G::inputs)
      .def_readonly("outputs", &G::outputs);
  mapping_protocol(gr, {"compiled", "text", "json", "op_counts", "ops", "inputs", "outputs"});
  py::class_<R> tr(m, "TranslationRecord",
                   "What one translation did: the codes, breaks, resume functions, graphs, guards, "
                   "and why it failed or was declined.");
  tr.def_readonly("original", &R::original)
      .def_readonly("transformed", &R::transformed)
      .def_readonly("resumes", &R::resumes)
      .def_readonly("breaks", &R::breaks)
      .def_readonly("guards", &R::guards)
      .def_readonly("failure", &R::failure)
      .def_readonly("declined", &R::declined)
      .def_readonly("seconds", &R::seconds)
      .def_readonly("instructions", &R::instructions)
      .def_readonly("simulated", &R::simulated)
      .def_readonly("folded", &R::folded)
      .def_readonly("graphs", &R::graphs)
      .def("__repr__", [](const R& r) {
        return "<TranslationRecord " + py::repr(r.original).cast<std::string>() + ">";
      });
  mapping_protocol(tr, {"original", "transformed", "resumes", "breaks", "guards", "failure",
                        "declined", "seconds", "instructions", "simulated", "folded", "graphs"});
}

}  // namespace

void bind_translator(py::module_& parent) {
  py::module_ m = parent.def_submodule("translator", "The symbolic opcode translator.");
  bind_records(m);
  using T = translator::SymbolicTranslator;
  py::class_<T, capture::Translator, std::shared_ptr<T>>(
      m, "SymbolicTranslator",
      "Simulates each captured frame's bytecode, folds what it can, breaks the graph where it "
      "cannot, and generates the transformed code with resume functions and guards.")
      .def(py::init<>())
      .def_readwrite("keep_records", &T::keep_records)
      .def_readwrite("strict", &T::strict)
      .def_readwrite("log", &T::log)
      .def_readwrite("backend", &T::backend)
      .def_readwrite("check_graphs", &T::check_graphs)
      .def_readwrite("dynamic_shapes", &T::dynamic_shapes)
      .def_readwrite("filter", &T::filter)
      .def_readonly("graphs", &T::graphs)
      .def_readonly("translations", &T::translations)
      .def_readonly("failures", &T::failures)
      .def_readonly("breaks", &T::breaks)
      .def(
          "records",
          [](const T& t) {
            py::list out;
            for (const translator::TranslationRecord& r : t.records) {
              out.append(py::cast(r));  // (a copy: the translator's list may change)
            }
            return out;
          },
          "One TranslationRecord per translation made while keep_records was on.")
      .def("clear_records", [](T& t) { t.records.clear(); })
      .def_static(
          "seen_codes",
          []() {
            py::list alive;
            py::list codes;
            for (const py::handle ref : T::seen()) {
              py::object code = ref();
              if (!code.is_none()) {
                alive.append(ref);
                codes.append(code);
              }
            }
            T::seen() = alive;
            return codes;
          },
          "The code objects any translator translated that are still alive.");
  m.def(
      "resume_info", [](const py::object& code) { return translator::resume_info(code.ptr()); },
      py::arg("code"),
      "(user's code object, byte offset it resumes at) for a resume function, else None.");
  m.def("numpy_coverage", &translator::numpy_coverage,
        "The NumPy callables captured, each with how it runs (docs/numpy_coverage.md).");
  m.def("simulated_opcodes", &translator::simulated_opcode_names,
        "The opcodes the translator simulates on this Python (every other one breaks the graph).");
  m.attr("LOG_BREAKS") = T::kLogBreaks;
  m.attr("LOG_BYTECODE") = T::kLogBytecode;
  m.attr("LOG_GUARDS") = T::kLogGuards;
  m.attr("LOG_GRAPHS") = T::kLogGraphs;
}

}  // namespace sot::module
