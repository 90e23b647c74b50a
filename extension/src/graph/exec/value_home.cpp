#include "graph/exec/value_home.hpp"

namespace sot::graph {

namespace {

thread_local ValueHome* t_home = nullptr;

}  // namespace

ValueHome* current_value_home() {
  return t_home;
}

ValueHomeScope::ValueHomeScope(ValueHome* home) : previous_(t_home) {
  t_home = home;
}

ValueHomeScope::~ValueHomeScope() {
  t_home = previous_;
}

}  // namespace sot::graph
