// Tier C: a whole graph's array results (whole_ops.hpp, hand_out_lines).
#include <algorithm>
#include <string>
#include <vector>

#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace sot::graph::whole {

std::vector<std::string> hand_out_lines(std::size_t k, const Val& v,
                                        const std::vector<std::string>& arrays,
                                        std::vector<std::string>* handed, int give_up,
                                        std::string* why) {
  // (an argument as it is; an array the code made: a vector, whose layout is NumPy's whatever
  // made it, or one NumPy makes C-ordered too)
  const bool argument = std::find(arrays.begin(), arrays.end(), v.expr) != arrays.end();
  if (v.type.kind != Kind::kArray || !(argument || ((v.fresh || v.whole) && v.c_order) ||
                                       (v.type.ndim == 1 && (v.whole || v.fresh)))) {
    *why = "a graph whose result is a view, or an array not made as NumPy makes it";
    return {};
  }
  if (std::find(handed->begin(), handed->end(), v.expr) != handed->end()) {
    *why = "a graph that returns one array twice";
    return {};
  }
  std::vector<std::string> lines;
  const std::string stop = " SOT_GIVE_UP(" + std::to_string(give_up) + ");";
  // (one array as two results - a carried array that ran no step is the array it started as -
  // is one object in Python: the groups' path hands it on)
  for (const std::string& before : *handed) {
    if (!before.empty()) {
      lines.push_back(cat({"if (", v.expr, " == ", before, ")", stop}));
    }
  }
  const std::string slot = "out[" + std::to_string(k) + "].u";
  std::string which = "0ULL";  // (1 + the argument it is)
  for (std::size_t j = arrays.size(); j-- > 0;) {
    if (!arrays[j].empty()) {
      which = cat({v.expr, " == ", arrays[j], " ? ", std::to_string(j + 1), "ULL : (", which, ")"});
    }
  }
  const std::string o = "o" + std::to_string(k);
  std::string bytes = "static_cast<long long>(sizeof(" + v.type.c_type() + "))";
  for (int d = 0; d < v.type.ndim; ++d) {
    bytes += cat({" * ", v.expr, "->shape[", std::to_string(d), "]"});
  }
  lines.push_back(cat({slot, " = ", which, ";"}));
  lines.push_back(cat({"if (", slot, " == 0ULL) {"}));
  lines.push_back(cat({"  char* const ", o, " = env->out_array(env, ", std::to_string(k), ", ",
                       v.expr, "->shape);"}));
  lines.push_back(cat({"  if (", o, " == nullptr)", stop}));
  lines.push_back(cat({"  __builtin_memcpy(", o, ", ", v.expr, "->data, ", bytes, ");"}));
  lines.push_back("}");
  handed->resize(k + 1);
  (*handed)[k] = v.expr;
  return lines;
}

}  // namespace sot::graph::whole
