// `_sot.translator`: the symbolic opcode translator (a capture-runtime Translator) and what its
// translations did.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "capture/translator.hpp"
#include "module/bindings.hpp"
#include "translator/opcode_executor.hpp"
#include "translator/symbolic_translator.hpp"

namespace py = pybind11;

namespace sot::module {

namespace {

py::dict record_dict(const translator::TranslationRecord& r) {
  py::dict d;
  d["original"] = r.original;
  d["transformed"] = r.transformed;
  py::list resumes;
  for (const translator::ResumeFunction& f : r.resumes) {
    py::dict rf;
    rf["code"] = f.code;
    rf["offset"] = f.offset;
    rf["stack"] = f.stack;
    rf["live"] = f.live;
    resumes.append(rf);
  }
  d["resumes"] = resumes;
  py::list breaks;
  for (const translator::BreakRecord& b : r.breaks) {
    py::dict bd;
    bd["reason"] = b.reason;
    bd["filename"] = b.filename;
    bd["lineno"] = b.lineno;
    bd["offset"] = b.offset;
    bd["in_place"] = b.in_place;
    breaks.append(bd);
  }
  d["breaks"] = breaks;
  d["guards"] = r.guards;
  d["failure"] = r.failure;
  d["declined"] = r.declined;
  d["seconds"] = r.seconds;
  d["instructions"] = r.instructions;
  d["simulated"] = r.simulated;
  d["folded"] = r.folded;
  py::list graphs;
  for (const translator::GraphRecord& g : r.graphs) {
    py::dict gd;
    gd["compiled"] = g.compiled;
    gd["text"] = g.text;
    gd["json"] = g.json;
    gd["op_counts"] = g.op_counts;
    gd["ops"] = g.ops;
    gd["inputs"] = g.inputs;
    gd["outputs"] = g.outputs;
    graphs.append(gd);
  }
  d["graphs"] = graphs;
  return d;
}

}  // namespace

void bind_translator(py::module_& parent) {
  py::module_ m = parent.def_submodule("translator", "The symbolic opcode translator.");
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
              out.append(record_dict(r));
            }
            return out;
          },
          "One dict per translation made while keep_records was on.")
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
  m.def("simulated_opcodes", &translator::simulated_opcode_names,
        "The opcodes the translator simulates on this Python (every other one breaks the graph).");
  m.attr("LOG_BREAKS") = T::kLogBreaks;
  m.attr("LOG_BYTECODE") = T::kLogBytecode;
  m.attr("LOG_GUARDS") = T::kLogGuards;
  m.attr("LOG_GRAPHS") = T::kLogGraphs;
}

}  // namespace sot::module
