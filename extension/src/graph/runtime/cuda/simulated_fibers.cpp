// The simulated block threads' stacks (simulated_fibers.hpp).
#include "graph/runtime/cuda/simulated_fibers.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace sot::graph {

namespace {

// A thread's stack (its guard page below it).
constexpr std::size_t kStackBytes = std::size_t{128} << 10;

// A host thread's stacks: mapped as a block first needs them, grown for a larger block, given back
// when the thread ends.
class Stacks {
 public:
  Stacks() = default;
  ~Stacks() {
    if (base_ != nullptr) {
      ::munmap(base_, count_ * stride());
    }
  }
  Stacks(const Stacks&) = delete;
  Stacks& operator=(const Stacks&) = delete;
  Stacks(Stacks&&) = delete;
  Stacks& operator=(Stacks&&) = delete;

  static std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
  static std::size_t stride() { return kStackBytes + page(); }

  void* get(unsigned count) {
    if (count <= count_) {
      return base_;
    }
    if (base_ != nullptr) {
      ::munmap(base_, count_ * stride());
      base_ = nullptr;
      count_ = 0;
    }
    void* made = ::mmap(nullptr, count * stride(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (made == MAP_FAILED) {
      return nullptr;
    }
    auto* bytes = static_cast<char*>(made);
    for (unsigned t = 0; t < count; ++t) {
      if (::mprotect(bytes + t * stride(), page(), PROT_NONE) != 0) {
        ::munmap(made, count * stride());  // (no stacks without their guards)
        return nullptr;
      }
    }
    base_ = made;
    count_ = count;
    return base_;
  }

 private:
  void* base_ = nullptr;
  unsigned count_ = 0;
};

void* stacks(unsigned count, unsigned long* stride) {
  thread_local Stacks mine;
  *stride = Stacks::stride();
  return mine.get(count);
}

}  // namespace

const SimulatedFibers* simulated_fibers() {
  static const SimulatedFibers made{&stacks};
  return &made;
}

}  // namespace sot::graph
