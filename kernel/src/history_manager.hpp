// History requests answered from IPython's own history database (xeus's in-memory manager answers
// rows of the wrong shape, and knows nothing of IPython's sessions).
#pragma once

#include <memory>
#include <string>

#include "nlohmann/json.hpp"
#include "xeus/xhistory_manager.hpp"

namespace xsot {

class ipython_history_manager final : public xeus::xhistory_manager {
 private:
  void configure_impl() override {}
  // IPython stores every cell it runs itself; nothing to do here.
  void store_inputs_impl(int session, int line_num, const std::string& input,
                         const std::string& output) override;
  nlohmann::json get_tail_impl(int n, bool raw, bool output) const override;
  nlohmann::json get_range_impl(int session, int start, int stop, bool raw,
                                bool output) const override;
  nlohmann::json search_impl(const std::string& pattern, bool raw, bool output, int n,
                             bool unique) const override;
};

std::unique_ptr<xeus::xhistory_manager> make_ipython_history_manager();

}  // namespace xsot
