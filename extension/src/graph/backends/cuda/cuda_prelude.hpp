// The CUDA C++ every generated kernel starts with (after its SOT_NB, SOT_R and SOT_NS defines):
// the argument block CudaArgs (cuda_launch.hpp lays it out on the host), NumPy's maximum, minimum,
// fmax and fmin, the flagged addition sums use (integer sums wrap, as NumPy's do), and the flat
// index's offsets into each buffer.
#pragma once

namespace sot::graph {

const char* cuda_prelude();

}  // namespace sot::graph
