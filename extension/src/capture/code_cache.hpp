// The per-code cache of the capture runtime, stored in the code object's extra slot and freed with
// it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace sot::capture {

class EntryTiming;
class GuardTree;

struct CacheEntry {
  pybind11::object code;   // the transformed code object
  pybind11::object guard;  // a GuardTree, callable(locals: dict) -> bool, or None for "always"
  std::shared_ptr<GuardTree> tree;  // set when `guard` is a GuardTree: evaluated in C++
  // Its time against the original code's (shared: a run may add entries to the cache it is in)
  std::shared_ptr<EntryTiming> timing;
};

struct Counters {
  std::uint64_t hits = 0;  // a cached entry's guard passed and its code ran in the frame
  std::uint64_t as_is =
      0;  // of those, hits that ran the original code: it ran faster (EntryTiming)
  std::uint64_t misses = 0;        // no entry's guard passed
  std::uint64_t translations = 0;  // the callback produced a new entry (its first run is not a hit)
  std::uint64_t declined = 0;      // the callback chose the original code
  std::uint64_t fallbacks = 0;     // the original code ran because something failed (reasons below)
  std::uint64_t failed = 0;        // translations that failed (each also a fallback)
  std::uint64_t guard_ns = 0;      // time spent in guards (estimated: see eval_hook.cpp)
  std::uint64_t lookups = 0;       // cache lookups (the guards' timing samples them)
  std::uint64_t unhooked = 0;      // runs with the hook off: quiet beneath (QuietRuns)
};

// Runs of a code (its entries' or its original) beneath which the hook did nothing but pass frames
// through to their original code (helpers given up on, skipped modules). After a few such runs in
// a row the code runs with the hook off, one run in a few with it again to see whether that still
// holds (eval_hook.cpp, "Quiet runs").
struct QuietRuns {
  std::uint32_t streak = 0;       // quiet runs in a row
  std::uint32_t since_probe = 0;  // runs with the hook off since the last run with it
};

// What a translator keeps per code object (resume functions, shapes seen), owned by the code's
// cache; the translator defines it. forget() runs when the cache is cleared (capture.clear()).
struct TranslatorData {
  TranslatorData() = default;
  TranslatorData(const TranslatorData&) = delete;
  TranslatorData& operator=(const TranslatorData&) = delete;
  virtual ~TranslatorData() = default;
  virtual void forget() = 0;
};

struct CodeCache {
  enum class Decision : std::uint8_t { kUndecided, kSkip, kCapture };
  Decision decision = Decision::kUndecided;
  std::uint64_t rules_generation = 0;  // skip rules the decision was made under
  std::string skip_reason;
  bool never_translate = false;  // marked "do not translate"
  std::vector<CacheEntry> entries;
  Counters counters;
  std::deque<std::string> reasons;  // latest fallback and recompile reasons, oldest first (bounded)
  // Set once `counters.failed` reaches the failure limit: the translator is not asked again (a miss
  // runs the original code at the cost of a lookup) until the cache is cleared. Says why.
  std::string gave_up;
  // Set when the entries stopped paying: at the entry limit, the calls that missed every entry
  // outnumber the hits (a helper specialized on a value that changes on every call). Every call
  // then runs the original code without a guard checked (`gave_up` says why).
  bool abandoned = false;
  std::uint64_t limit_misses = 0;  // misses at the entry limit
  QuietRuns quiet;
  std::unique_ptr<TranslatorData> translator_data;  // nullptr until the translator makes it

  void record(std::string reason);
};

// The cache of `code` (borrowed), created on first use; nullptr only if the extra slot cannot be
// used (then a Python error is set).
CodeCache* cache_for(PyObject* code);
// The cache of `code` if it has one, else nullptr (no error).
CodeCache* existing_cache(PyObject* code);

}  // namespace sot::capture
