// The symbolic opcode translator as a capture-runtime Translator: decode the frame's code,
// simulate it on Variables (OpcodeExecutor), generate the transformed code and its resume
// functions (CodeGen), and guard what the simulation relied on (GuardSet). Anything it cannot do
// soundly is a failure with a reason: the original code runs.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "capture/translator.hpp"
#include "translator/codegen/codegen.hpp"

namespace sot::translator {

struct BreakRecord {
  std::string reason;
  std::string filename;
  int lineno = -1;
  int offset = -1;        // byte offset of the breaking instruction in its code
  bool in_place = false;  // the rest of the frame ran as is (no resume function)
};

// What one translation did (for explain() and SOT_LOG).
struct TranslationRecord {
  pybind11::object original;     // the code object translated
  pybind11::object transformed;  // None when the original runs
  std::vector<ResumeFunction> resumes;
  std::vector<BreakRecord> breaks;
  std::vector<std::string> guards;
  std::string failure;   // why the translation failed and the original runs (empty otherwise)
  std::string declined;  // why the translator chose not to translate (empty otherwise)
  double seconds = 0;
  std::size_t instructions = 0;  // in the original code
  std::size_t simulated = 0;
  std::size_t folded = 0;
  std::vector<GraphRecord> graphs;  // the graph the transformed code calls (none or one)
};

class SymbolicTranslator final : public capture::Translator {
 public:
  capture::Translation translate(const capture::FrameInfo& frame) override;

  bool keep_records = false;
  bool strict = false;  // a graph break is a failure (raised under the runtime's strict mode)
  std::string backend = "numpy";  // the graph backend, by name
  bool check_graphs = false;      // check every graph op's result against the rules (tests)
  bool dynamic_shapes = true;     // a dimension that changes size becomes a shape symbol
  // None, or a callable filter(code) -> bool: code it rejects is declined (e.g. the notebook's
  // %%sot translates only functions defined in notebook cells).
  pybind11::object filter = pybind11::none();
  unsigned log = 0;  // kLog* bits: what to print to stderr
  static constexpr unsigned kLogBreaks = 1;
  static constexpr unsigned kLogBytecode = 2;
  static constexpr unsigned kLogGuards = 4;
  static constexpr unsigned kLogGraphs = 8;
  std::vector<TranslationRecord> records;
  // Weak references to every code object any SymbolicTranslator translated (for reset()); shared by
  // all translators, so that translations of one that is gone can still be forgotten.
  static pybind11::list& seen();
  std::uint64_t translations = 0;
  std::uint64_t failures = 0;
  std::uint64_t breaks = 0;
  std::uint64_t graphs = 0;  // graphs captured (one per transformed code that calls one)

 private:
  capture::Translation run(const capture::FrameInfo& frame, TranslationRecord* record);
};

}  // namespace sot::translator
