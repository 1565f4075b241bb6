// fp32 pooling over NC[D]HW data: windowed max/average and the global pools.
// 1-D and 2-D pools are 3-D ones whose leading spatial extents are 1.
#ifndef QCC_KERNELS_CPU_POOL_H_
#define QCC_KERNELS_CPU_POOL_H_

#include <array>
#include <cstdint>

namespace qcc::cpu {

/// Geometry of a windowed pool over `planes` (= N * C) independent planes, fp32 or int8
/// (qpool.h). Spatial arrays are (depth, height, width); unused leading axes have extent 1,
/// stride 1, dilation 1, pads 0. `out` is ONNX's output extent (floor or ceil_mode, a ceil_mode
/// window starting in the end padding dropped), computed by the caller.
struct PoolGeometry {
  int64_t planes = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<int64_t, 3> pad_begin{0, 0, 0}, pad_end{0, 0, 0};

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

/// An fp32 pool: its geometry and the threads it may use.
struct PoolF32Params : PoolGeometry {
  int num_threads = 1;
};

/// y = max of x over the taps of each window that fall inside x (padding never wins; a window
/// with no such tap gives the lowest float). When `indices` is not null it receives the flat
/// index into x of each maximum (first one on ties), counting the plane, with the spatial axes
/// row-major or, with `column_major`, first axis fastest (ONNX storage_order 1).
void MaxPoolF32(const PoolF32Params& p, const float* x, float* y, int64_t* indices,
                bool column_major);

/// y = mean of x over the taps of each window inside x. The divisor counts the taps inside x,
/// or with `count_include_pad` those inside the padded extent [-pad_begin, in + pad_end) (so a
/// ceil_mode window hanging past the end padding is not padded further).
void AveragePoolF32(const PoolF32Params& p, bool count_include_pad, const float* x, float* y);

/// y[i] = mean (or max) of x[i * size, (i + 1) * size) for each of `planes` planes.
void GlobalAveragePoolF32(int64_t planes, int64_t size, const float* x, float* y, int num_threads);
void GlobalMaxPoolF32(int64_t planes, int64_t size, const float* x, float* y, int num_threads);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_POOL_H_
