// Device-side self tests of the kernel bodies, for tests/gpu (a .cc binary that cannot launch
// kernels itself): each function copies host inputs to the device, launches one body with
// LaunchIndex (or EnqueueBatchStats), copies the result back and synchronises. Returns the CUDA
// error code as an int (0 = success; SelfTestErrorString names it), so this header needs no CUDA
// include. Only built with CUDA (QCC_HAVE_CUDA). Not for production paths: they allocate.
#ifndef QCC_KERNELS_CUDA_BODY_SELFTEST_H_
#define QCC_KERNELS_CUDA_BODY_SELFTEST_H_

#include <cstdint>

#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/movement_bodies.h"
#include "kernels/cuda/observer_bodies.h"
#include "kernels/cuda/pool_bodies.h"

namespace qcc::cuda::selftest {

/// cudaGetErrorString of a code these functions returned.
const char* SelfTestErrorString(int code);

// Each takes Args whose pointers are HOST pointers with the element counts given, runs the body
// over n on the device with device copies of those buffers, and writes the output to the host
// output pointer of `a`.

/// QuantizeBody over n = n_elems.
int RunQuantize(const QuantizeArgs& a, int64_t n_elems);
/// UnaryBody over n = n_elems.
int RunUnary(const UnaryArgs& a, int64_t n_elems);
/// BinaryBody: a has a_elems, b b_elems, y = product of a.out_dims elements.
int RunBinary(const BinaryArgs& a, int64_t a_elems, int64_t b_elems);
/// SoftmaxBody: x and y hold outer * axis_n * inner elements.
int RunSoftmax(const SoftmaxArgs& a);
/// QAveragePoolBody: x holds planes * in_h * in_w elements.
int RunQAveragePool(const QAveragePoolArgs& a);
/// StridedCopyBody (Transpose / Slice): x holds in_elems elements of a.elem_size bytes; y the
/// product of a.out_dims.
int RunStridedCopy(const StridedCopyArgs& a, int64_t in_elems);
/// EnqueueBatchStats of n host floats into *out (host).
int RunBatchStats(const float* x, int64_t n, BatchStats* out);

}  // namespace qcc::cuda::selftest

#endif  // QCC_KERNELS_CUDA_BODY_SELFTEST_H_
