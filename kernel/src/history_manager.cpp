#include "history_manager.hpp"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace xsot {

namespace {
// Calls xsot_kernel.history.<name>(*args), which returns the reply as a JSON string.
template <typename... Args>
nlohmann::json call_history(const char* name, Args&&... args) {
  py::gil_scoped_acquire gil;
  try {
    py::object history = py::module_::import("xsot_kernel.history");
    const std::string reply =
        history.attr(name)(std::forward<Args>(args)...).template cast<std::string>();
    return nlohmann::json::parse(reply);
  } catch (const py::error_already_set& e) {
    return nlohmann::json{{"status", "error"},
                          {"ename", "HistoryError"},
                          {"evalue", e.what()},
                          {"traceback", nlohmann::json::array()},
                          {"history", nlohmann::json::array()}};
  }
}
}  // namespace

void ipython_history_manager::store_inputs_impl(int /*session*/, int /*line_num*/,
                                                const std::string& /*input*/,
                                                const std::string& /*output*/) {}

nlohmann::json ipython_history_manager::get_tail_impl(int n, bool raw, bool output) const {
  return call_history("tail", n, raw, output);
}

nlohmann::json ipython_history_manager::get_range_impl(int session, int start, int stop, bool raw,
                                                       bool output) const {
  return call_history("range", session, start, stop, raw, output);
}

nlohmann::json ipython_history_manager::search_impl(const std::string& pattern, bool raw,
                                                    bool output, int n, bool unique) const {
  return call_history("search", pattern, raw, output, n, unique);
}

std::unique_ptr<xeus::xhistory_manager> make_ipython_history_manager() {
  return std::make_unique<ipython_history_manager>();
}

}  // namespace xsot
