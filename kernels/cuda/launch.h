// Index launchers for kernel bodies (DESIGN.md s.5). A kernel body that needs no shared memory is
// a QCC_HOST_DEVICE function over one index i in [0, n) and an arguments struct of plain values
// and pointers:
//
//   struct ScaleArgs { const float* x; float* y; float s; };
//   QCC_HOST_DEVICE inline void ScaleAt(const ScaleArgs& a, int64_t i) { a.y[i] = a.x[i] * a.s; }
//
// On the CPU, ForEachIndex(n, args, ScaleAt-functor) runs it in a plain loop (tests compare that
// against the backend_cpu reference kernels bit for bit); on the GPU, launch.cuh's LaunchIndex
// runs the same body from a grid-stride CUDA kernel. The arithmetic is therefore one source.
#ifndef QCC_KERNELS_CUDA_LAUNCH_H_
#define QCC_KERNELS_CUDA_LAUNCH_H_

#include <cstdint>

#include "support/float16.h"  // QCC_HOST_DEVICE

namespace qcc::cuda {

/// Runs `body(args, i)` for i in [0, n) in order on the calling thread. `Body` is a type with a
/// static QCC_HOST_DEVICE `Run(const Args&, int64_t)` (so the same type can be a kernel argument).
template <typename Body, typename Args>
void ForEachIndex(int64_t n, const Args& args) {
  for (int64_t i = 0; i < n; ++i) Body::Run(args, i);
}

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_LAUNCH_H_
