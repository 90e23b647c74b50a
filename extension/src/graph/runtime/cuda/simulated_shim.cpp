// The simulated device's host programs (simulated_shim.hpp).
#include "graph/runtime/cuda/simulated_shim.hpp"

#include <regex>

namespace sot::graph {

namespace {

// CUDA's built-ins as the generated kernels use them, on the host. A block's threads are run one
// after another, or, where the code meets at __syncthreads, as fibers on the launching thread
// (simulated_fibers.hpp); __shared__ arrays are statics (one block runs at a time).
constexpr const char* kShim = R"SHIM(#include <cmath>
#include <cstring>
using std::abs; using std::ceil; using std::cos; using std::cosh; using std::exp; using std::exp2;
using std::expm1; using std::fabs; using std::floor; using std::fmod; using std::hypot;
using std::isfinite; using std::isinf; using std::isnan; using std::log; using std::log10;
using std::log1p; using std::log2; using std::pow; using std::rint; using std::signbit; using std::sin;
using std::sinh; using std::sqrt; using std::tan; using std::tanh; using std::trunc; using std::atan2;
using std::asin; using std::acos; using std::atan; using std::cbrt; using std::copysign;
struct SotDim3 { unsigned x = 0, y = 1, z = 1; };
thread_local SotDim3 threadIdx, blockIdx;
SotDim3 gridDim, blockDim;
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, sizeof d); return d; }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
struct SotSimFibers { void* (*stacks)(unsigned count, unsigned long* stride); };
// Fibers (x86-64): sot_fiber_switch saves the callee-saved registers on the running stack, keeps
// its top in *from, and goes on at `to`; a new fiber's stack holds registers whose r12 is the
// argument and r13 the function that sot_fiber_start calls.
#if !defined(__x86_64__)
#error "the simulated device's fibers switch stacks as x86-64 does"
#endif
extern "C" void sot_fiber_switch(void** from, void* to);
asm(R"(.pushsection .text
.p2align 4
.globl sot_fiber_switch
.hidden sot_fiber_switch
.type sot_fiber_switch,@function
sot_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size sot_fiber_switch, .-sot_fiber_switch
.p2align 4
.type sot_fiber_start,@function
sot_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
.size sot_fiber_start, .-sot_fiber_start
.popsection
)");
extern "C" void sot_fiber_start();
struct SotFiberRun {
  void (*call)(const void*);
  const void* body;
  void* main = nullptr;  // the launching stack, while a fiber runs
  void** sp = nullptr;   // each fiber's saved stack top
  bool* done = nullptr;
  unsigned current = 0;
};
thread_local SotFiberRun* sot_fiber_run = nullptr;
// The barrier: this thread waits; the next one runs.
inline void __syncthreads() {
  SotFiberRun* r = sot_fiber_run;
  sot_fiber_switch(&r->sp[r->current], r->main);
}
void sot_fiber_main(void* context) {
  auto* r = static_cast<SotFiberRun*>(context);
  r->call(r->body);
  r->done[r->current] = true;
  sot_fiber_switch(&r->sp[r->current], r->main);  // (never comes back)
  __builtin_trap();
}
// A new fiber's stack top, under `top`: the registers sot_fiber_switch pops, then sot_fiber_start
// (16-byte aligned where it calls).
void* sot_fiber_stack(char* top, SotFiberRun* run) {
  auto* words = reinterpret_cast<void**>(top - 16) - 7;
  words[0] = nullptr;                                    // r15
  words[1] = nullptr;                                    // r14
  words[2] = reinterpret_cast<void*>(&sot_fiber_main);  // r13
  words[3] = run;                                        // r12
  words[4] = nullptr;                                    // rbx
  words[5] = nullptr;                                    // rbp
  words[6] = reinterpret_cast<void*>(&sot_fiber_start); // the return address
  return words;
}
template <typename F> void sot_sim_call(const void* body) { (*static_cast<const F*>(body))(); }
// A block's threads that meet at barriers, as fibers: round after round, each thread runs to its
// next barrier or its end, in index order one round and the reverse the next (no order is CUDA's:
// code whose result depends on it differs). 0; 1 where the threads had no stacks (or a block runs
// inside another); 2 where some threads ended while others waited at a barrier (CUDA leaves that
// undefined: the block is abandoned there).
template <typename F> int sot_sim_together(unsigned block, const SotSimFibers* fibers, const F& body) {
  if (block > 1024 || sot_fiber_run != nullptr) return 1;
  unsigned long stride = 0;
  char* base = static_cast<char*>(fibers->stacks(block, &stride));
  if (base == nullptr) return 1;
  void* sp[1024];
  bool done[1024];
  SotFiberRun run{&sot_sim_call<F>, &body};
  run.sp = sp;
  run.done = done;
  for (unsigned t = 0; t < block; ++t) {
    sp[t] = sot_fiber_stack(base + (t + 1) * stride, &run);
    done[t] = false;
  }
  sot_fiber_run = &run;
  int outcome = 0;
  for (unsigned round = 0, left = block; left > 0 && outcome == 0; ++round) {
    unsigned waiting = 0;
    unsigned ended = 0;
    for (unsigned k = 0; k < block; ++k) {
      const unsigned t = round % 2 == 0 ? k : block - 1 - k;
      if (done[t]) continue;
      run.current = t;
      threadIdx.x = t;
      sot_fiber_switch(&run.main, sp[t]);
      (done[t] ? ended : waiting) += 1;
    }
    outcome = ended > 0 && waiting > 0 ? 2 : 0;
    left = waiting;
  }
  sot_fiber_run = nullptr;
  return outcome;
}
// A launch: 0, or sot_sim_together's failure.
template <typename F>
int sot_sim_run(unsigned grid, unsigned block, bool together, const SotSimFibers* fibers, const F& body) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned g = 0; g < grid; ++g) {
    blockIdx.x = g;
    if (together) {
      if (const int failed = sot_sim_together(block, fibers, body)) return failed;
      continue;
    }
    for (unsigned t = 0; t < block; ++t) {
      threadIdx.x = t;
      body();
    }
  }
  return 0;
}
)SHIM";

}  // namespace

const std::vector<std::string>& simulated_host_flags() {
  static const std::vector<std::string> flags = {
      "-O1",      "-std=c++20", "-ffp-contract=off",   "-fPIC", "-shared",
      "-pthread", "-w",         "-fcf-protection=none"};  // (a switch of stacks by `ret` is no
                                                          // shadow stack's)
  return flags;
}

namespace {

// The entry points of a module's source, in order.
std::vector<std::string> entries(const std::string& source) {
  static const std::regex entry(
      R"(__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\()");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), entry);
       it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1].str());
  }
  return names;
}

}  // namespace

std::string simulated_host_program(const std::string& source) {
  const bool together = source.find("__syncthreads") != std::string::npos;
  std::string code = std::string(kShim) + source + "\n";
  for (const std::string& name : entries(source)) {
    code += "extern \"C\" int sot_sim_";
    code += name;
    code +=
        "(const unsigned long long* words, unsigned long count, unsigned grid, unsigned block, "
        "const SotSimFibers* fibers) "
        "{\n  CudaArgs a;\n  std::memset(&a, 0, sizeof a);\n"
        "  std::memcpy(&a, words, count * 8 < sizeof a ? count * 8 : sizeof a);\n"
        "  return sot_sim_run(grid, block, ";
    code += together ? "true" : "false";
    code += ", fibers, [&a] { ";
    code += name;
    code += "(a); });\n}\n";
  }
  return code;
}

}  // namespace sot::graph
