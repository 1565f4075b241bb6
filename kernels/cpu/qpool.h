// int8 pooling over NC[D]HW data: MaxPool, AveragePool and GlobalAveragePool on raw int8 values.
// 1-D and 2-D pools are 3-D ones whose leading spatial extents are 1 (as in pool.h).
//
// MaxPool has an AVX-512 path (avx512f/bw/vl + bmi2, width stride 1 or 2) that gives the same
// bits as its reference (tests/backend_cpu/int8_pool_test.cc); the average pools are scalar.
#ifndef QCC_KERNELS_CPU_QPOOL_H_
#define QCC_KERNELS_CPU_QPOOL_H_

#include <cstdint>

#include "kernels/cpu/pool.h"  // PoolGeometry

namespace qcc::cpu {

/// Requantization of an average pool: y = AverageValue(sum, count, multiplier, zp_out, lo, hi),
/// i.e. Saturate((float(sum) * multiplier) / float(count), zp_out, lo, hi), where sum is the
/// int64 sum of (x - zp_in) over the window's taps inside x and multiplier =
/// RescaleMultiplier(s_in, s_out).
struct AvgPoolS8Quant {
  int32_t zp_in = 0;
  float multiplier = 1.0f;
  int32_t zp_out = 0;
  int32_t lo = -128, hi = 127;
};

/// y = max of the raw int8 x over the taps of each window that fall inside x (padding never
/// wins; a window with no such tap gives -128). The output scale and zero point are the
/// input's, so no requantization happens.
void MaxPoolS8(const PoolGeometry& g, const int8_t* x, int8_t* y, int num_threads);
void MaxPoolS8Reference(const PoolGeometry& g, const int8_t* x, int8_t* y);

/// True when MaxPoolS8 takes its AVX-512 path for `g` on this CPU.
bool MaxPoolS8UsesAvx512(const PoolGeometry& g);
/// True when it takes its AVX2 path instead (2-D planes, horizontal stride 1 or 2, no AVX-512).
bool MaxPoolS8UsesAvx2(const PoolGeometry& g);
/// Whether MaxPoolS8 takes its separable VBMI form: 2-D planes whose input rows are at most 128
/// bytes and output rows at most 64, on a CPU with AVX-512 VBMI (same bits as the reference).
bool MaxPoolS8FitsVbmi(const PoolGeometry& g);

/// y = AverageValue over each window (see AvgPoolS8Quant). count is the number of taps inside x,
/// or with `count_include_pad` inside the padded extent [-pad_begin, in + pad_end) (a ceil_mode
/// window hanging past the end padding is not padded further), as ONNX AveragePool counts; a
/// window with count 0 gives Saturate(0, zp_out, lo, hi).
void AveragePoolS8(const PoolGeometry& g, const AvgPoolS8Quant& q, bool count_include_pad,
                   const int8_t* x, int8_t* y, int num_threads);

/// y[i] = AverageValue(sum of (x - zp_in) over x[i * size, (i + 1) * size), size, ...) for each
/// of `planes` planes; size 0 gives Saturate(0, zp_out, lo, hi).
void GlobalAveragePoolS8(int64_t planes, int64_t size, const AvgPoolS8Quant& q, const int8_t* x,
                         int8_t* y, int num_threads);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_QPOOL_H_
