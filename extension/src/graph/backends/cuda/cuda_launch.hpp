// The CUDA backend's launch planning, on the host: for one run of a kernel, the entry point to
// launch, its grid, and the CudaArgs block (cuda_emitter.hpp) filled from the arrays' device
// addresses, shapes and strides. No CUDA call is made here, so the planning is tested without a
// GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {

// One of the kernel's buffers in this run: where it is on the device, its shape and its strides
// in bytes (as NumPy gives them; CuPy's arrays give the same).
struct DeviceArray {
  std::uint64_t address = 0;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // bytes
};

struct CudaLaunch {
  std::string entry;  // "<k>_flat", "<k>_strided", "<k>_rows" or "<k>_partial"
  unsigned grid = 1;
  unsigned block = 256;
  // A sum or mean over all axes: the second pass ("<k>_total", one block) after the first, and
  // the scratch its partials need (`parts` values of the reduced dtype).
  std::string second;
  unsigned parts = 0;
  std::size_t partial_bytes = 0;
  std::vector<std::uint64_t> args;  // the CudaArgs block, 8-byte words
};

// Where the words of the CudaArgs block of a kernel with `buffers` buffers, domain rank `rank` and
// `scalars` scalars are: b[], st[][], size[], n, rows, s[], partial, flags.
struct CudaArgsLayout {
  std::size_t buffers = 0;
  std::size_t rank = 0;
  std::size_t scalars = 0;
  std::size_t pointer(std::size_t b) const { return b; }
  std::size_t stride(std::size_t b, std::size_t d) const { return buffers + b * rank + d; }
  std::size_t size(std::size_t d) const { return buffers + buffers * rank + d; }
  std::size_t n() const { return buffers + buffers * rank + rank; }
  std::size_t rows() const { return n() + 1; }
  std::size_t scalar(std::size_t i) const { return n() + 2 + i; }
  std::size_t partial() const { return n() + 2 + (scalars > 0 ? scalars : 1); }
  std::size_t flags() const { return partial() + 1; }
  std::size_t words() const { return flags() + 1; }
};

// The launch of `k` (emitted as `src`) over `domain` with `arrays` (one per buffer, in the
// kernel's order), the scalars' bits (`scalar_bits`, as src.scalar_kinds says), the device
// address of the flag word and of the partials' scratch (0 until allocated: partial_bytes says
// how much). `multiprocessors` bounds the grid of grid-stride kernels. nullopt and `why` when a
// stride is not a whole number of elements (the run then goes elsewhere).
std::optional<CudaLaunch> plan_launch(const kir::Kernel& k, const CudaSource& src,
                                      const std::vector<std::int64_t>& domain,
                                      const std::vector<DeviceArray>& arrays,
                                      const std::vector<std::uint64_t>& scalar_bits,
                                      std::uint64_t flags, std::uint64_t partial,
                                      int multiprocessors, std::string* why);

// The blocks of a sum over all axes of `n` elements (a function of `n` and the order alone, so
// that the sum is the same on every device): chunk > 0, one a part of NumPy's; else a power of 2,
// each a subtree of NumPy's pairwise recursion of at least 32768 elements, at most 4096.
unsigned reduction_parts(std::int64_t n, std::int64_t chunk);

}  // namespace sot::graph
