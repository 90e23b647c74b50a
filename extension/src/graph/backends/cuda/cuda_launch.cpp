#include "graph/backends/cuda/cuda_launch.hpp"

#include <algorithm>

#include "graph/backends/cuda/cuda_pairwise.hpp"

namespace sot::graph {

namespace {

constexpr auto kThreads = static_cast<unsigned>(kReductionThreads);  // (the emitter's)
constexpr unsigned kBlocksPerSm = 32;      // grid-stride kernels: at most this many blocks an SM
constexpr std::int64_t kPerBlock = 32768;  // all-axes sums: a block's subtree at least this
constexpr unsigned kMaxParts = 4096;       // ... in at most this many blocks
constexpr std::int64_t kMaxChunks = std::int64_t{1} << 30;  // NumPy's parts: a block each

std::int64_t product(const std::vector<std::int64_t>& v, std::size_t count) {
  std::int64_t p = 1;
  for (std::size_t i = 0; i < count && i < v.size(); ++i) {
    p *= v[i];
  }
  return p;
}

// The reduction's output buffer (-1: none) and whether it is over all axes, keeping dims.
struct ReducedOutput {
  int buffer = -1;
  bool all = false;
  bool keepdims = false;
};

ReducedOutput reduced_output(const kir::Kernel& k) {
  ReducedOutput out;
  const int r = k.reduction();
  if (r < 0) {
    return out;
  }
  const kir::Expr& e = k.exprs[static_cast<std::size_t>(r)];
  out.all = e.reduce.all;
  out.keepdims = e.reduce.keepdims;
  for (const kir::Store& st : k.stores) {
    if (st.expr == r) {
      out.buffer = st.buffer;
    }
  }
  return out;
}

// Buffer `b`'s element strides along the domain's axes (0 where broadcast), or false and `why`.
bool element_strides(const kir::Kernel& k, std::size_t b, const DeviceArray& a,
                     const std::vector<std::int64_t>& domain, const ReducedOutput& red,
                     std::vector<std::int64_t>* out, std::string* why) {
  const std::size_t rank = domain.size();
  out->assign(rank, 0);
  if (static_cast<int>(b) == red.buffer && red.all) {
    return true;  // (one value, written at offset 0)
  }
  std::vector<std::int64_t> shape = a.shape;
  std::vector<std::int64_t> strides = a.strides;
  if (static_cast<int>(b) == red.buffer && !red.keepdims) {
    shape.push_back(1);  // a row reduction without keepdims: the reduced axis is the last one
    strides.push_back(0);
  }
  if (shape.size() > rank || strides.size() != shape.size()) {
    *why = "an array of higher rank than the kernel's domain";
    return false;
  }
  const std::int64_t itemsize = sot::graph::itemsize(k.buffers[b].dtype);
  const std::size_t offset = rank - shape.size();
  for (std::size_t d = offset; d < rank; ++d) {
    const std::int64_t size = shape[d - offset];
    const std::int64_t stride = strides[d - offset];
    if (size == 1 && domain[d] != 1) {
      continue;  // broadcast
    }
    if (size != domain[d]) {
      *why = "an array whose shape does not broadcast to the kernel's domain";
      return false;
    }
    if (stride % itemsize != 0) {
      *why = "a stride that is not a whole number of elements";
      return false;
    }
    (*out)[d] = stride / itemsize;
  }
  return true;
}

// Every buffer holds the whole domain in C order: the flat entry point indexes them all by i.
bool all_flat(const std::vector<std::vector<std::int64_t>>& strides,
              const std::vector<std::int64_t>& domain) {
  for (const std::vector<std::int64_t>& st : strides) {
    std::int64_t expected = 1;
    for (std::size_t d = domain.size(); d-- > 0;) {
      if (domain[d] != 1 && st[d] != expected) {
        return false;
      }
      expected *= domain[d];
    }
  }
  return true;
}

}  // namespace

unsigned reduction_parts(std::int64_t n, std::int64_t chunk) {
  if (chunk > 0) {
    return static_cast<unsigned>(std::clamp<std::int64_t>((n + chunk - 1) / chunk, 1, kMaxChunks));
  }
  unsigned parts = 1;  // 2^D: D levels of the recursion, a block at least kPerBlock elements
  while (parts < kMaxParts && n / (std::int64_t{parts} * 2) >= kPerBlock) {
    parts *= 2;
  }
  return parts;
}

std::optional<CudaLaunch> plan_launch(const kir::Kernel& k, const CudaSource& src,
                                      const std::vector<std::int64_t>& domain,
                                      const std::vector<DeviceArray>& arrays,
                                      const std::vector<std::uint64_t>& scalar_bits,
                                      std::uint64_t flags, std::uint64_t partial,
                                      int multiprocessors, std::string* why) {
  if (arrays.size() != k.buffers.size() || domain.size() != k.domain.size() ||
      scalar_bits.size() != k.scalars.size()) {
    *why = "the run's arrays, domain or scalars do not match the kernel";
    return std::nullopt;
  }
  const std::int64_t n = product(domain, domain.size());
  if (n == 0) {
    *why = "an empty domain";
    return std::nullopt;
  }
  const ReducedOutput red = reduced_output(k);
  std::vector<std::vector<std::int64_t>> strides(arrays.size());
  for (std::size_t b = 0; b < arrays.size(); ++b) {
    if (!element_strides(k, b, arrays[b], domain, red, &strides[b], why)) {
      return std::nullopt;
    }
  }
  const CudaArgsLayout layout{arrays.size(), domain.size(), scalar_bits.size()};
  CudaLaunch launch;
  launch.args.assign(layout.words(), 0);
  for (std::size_t b = 0; b < arrays.size(); ++b) {
    launch.args[layout.pointer(b)] = arrays[b].address;
    for (std::size_t d = 0; d < domain.size(); ++d) {
      launch.args[layout.stride(b, d)] = static_cast<std::uint64_t>(strides[b][d]);
    }
  }
  for (std::size_t d = 0; d < domain.size(); ++d) {
    launch.args[layout.size(d)] = static_cast<std::uint64_t>(domain[d]);
  }
  launch.args[layout.n()] = static_cast<std::uint64_t>(n);
  for (std::size_t i = 0; i < scalar_bits.size(); ++i) {
    launch.args[layout.scalar(i)] = scalar_bits[i];
  }
  launch.args[layout.partial()] = partial;
  launch.args[layout.flags()] = flags;
  const auto grid_cap =
      static_cast<std::int64_t>(std::max(1, multiprocessors)) * std::int64_t{kBlocksPerSm};
  launch.block = kThreads;
  if (!src.reduces) {
    launch.entry = src.name + (all_flat(strides, domain) ? "_flat" : "_strided");
    launch.grid = static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, grid_cap));
  } else if (src.all_axes) {
    launch.entry = src.name + "_partial";
    launch.second = src.name + "_total";
    launch.parts = reduction_parts(n, src.sum_chunk);
    launch.grid = launch.parts;
    launch.args[layout.rows()] = launch.parts;
    launch.partial_bytes =
        static_cast<std::size_t>(launch.parts) *
        static_cast<std::size_t>(itemsize(k.buffers[static_cast<std::size_t>(red.buffer)].dtype));
  } else {
    const std::int64_t rows = product(domain, domain.size() - 1);
    launch.entry = src.name + "_rows";
    launch.args[layout.rows()] = static_cast<std::uint64_t>(rows);
    // (in order: a row a thread; else a row a block, or a block of short rows)
    launch.grid = static_cast<unsigned>(
        std::min(src.ordered ? (rows + kThreads - 1) / kThreads : rows, grid_cap));
  }
  return launch;
}

}  // namespace sot::graph
