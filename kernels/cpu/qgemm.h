// int8 GEMM of the int8 runtime (DESIGN.md s.2): y = requantize(bias + a * b^T), the numerics
// contract of support/quantize.h, with a reference implementation that IS the contract and
// AVX-512 VNNI (qgemm_vnni.cc) and AVX2 (qgemm_avx2.cc) fast paths that give the same bits
// (tests/backend_cpu/int8_gemm_test.cc).
//
// Contract: for m < M, n < N
//   acc[m, n] = bias[n] + sum_{k < K} a[m, k] * b[n, k]          (int32, wrapping: see below)
//   y[m, n]   = Requantize(acc[m, n], multiplier[n], zp_out, lo, hi)
// a: int8 activations [M, K] row-major; b: int8 weights [N, K] row-major (ONNX Gemm transB=1;
// the compiler transposes as needed), symmetric in [-127, 127]; bias: int32 [N] (null: 0) with
// the activation zero-point correction -zp_a * sum_k b[n, k] already folded in by the compiler;
// [lo, hi] within [-128, 127] (a fused ReLU/ReLU6 narrows it). Per-tensor weights are per-channel
// ones whose multipliers are all equal.
// fp32 result (y_f32 set: an int8 Linear layer whose consumers are float, as in a transformer):
//   y_f32[m, n] = float(acc[m, n]) * multiplier[n] + bias_f32[n]     (two fp32 roundings, no FMA)
// with multiplier[n] = s_a * s_w[n] (the real scale of the accumulator) and bias_f32 the layer's
// float bias (null: 0); y, zp_out, lo and hi are unused.
// Overflow: acc is the exact sum reduced modulo 2^32 (two's complement), in every path. With
// |a| <= 128 and |b| <= 127 the exact sum fits int32 while K <= (2^31 - |bias|) / 16256,
// about 132,000; past that the result is still bit-identical between paths, but meaningless.
#ifndef QCC_KERNELS_CPU_QGEMM_H_
#define QCC_KERNELS_CPU_QGEMM_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace qcc::cpu {

/// Which implementation weight packing prepares: the fastest this CPU runs (AMX for the convs
/// it takes, else VNNI, else AVX2, else the reference), the reference, the AVX2 paths (the
/// reference on CPUs without AVX2) or the VNNI paths without AMX (the reference on CPUs
/// without VNNI). Tests use kAvx2 and kVnni to check those paths on CPUs that have more.
enum class QKernelPath { kFastest, kReference, kAvx2, kVnni };

/// True when this CPU runs the int8 VNNI fast paths (AVX-512 F/BW/VL/VNNI/VBMI/VBMI2).
bool QInt8HasVnni();

/// True when it also runs the AMX-INT8 tile path of the convolution (and the OS lets it).
bool QInt8HasAmx();

/// True when this CPU runs the int8 AVX2 fast paths.
bool QInt8HasAvx2();

/// Operands of one int8 GEMM (contract above); all buffers are dense and row-major.
struct QGemmParams {
  int64_t m = 0, n = 0, k = 0;
  const int8_t* a = nullptr;          // [M, K] activations
  const int8_t* b = nullptr;          // [N, K] weights (read by PackQGemmWeights/QGemmReference)
  const int32_t* bias = nullptr;      // [N], zero-point correction folded in; null: 0
  const float* multiplier = nullptr;  // [N] requantization multipliers
  int32_t zp_out = 0, lo = -128, hi = 127;
  int8_t* y = nullptr;               // [M, N]
  float* y_f32 = nullptr;            // [M, N]: the fp32 result instead of y (see above)
  const float* bias_f32 = nullptr;   // [N] with y_f32; null: 0
  const float* add_f32 = nullptr;    // [M, N] with y_f32, added last (a residual); null: none
  const float* row_scale = nullptr;  // [M] with y_f32: float(acc) * multiplier[n] * row_scale[m]
                                     // (per-row activation scales); null: none
  int num_threads = 1;               // <= 1 runs on the calling thread
};

/// Weights of one GEMM prepared once at load time for QGemm; owns its buffers.
struct PackedQGemmWeights {
  enum class Layout { kReference, kVnni, kAvx2 };
  Layout layout = Layout::kReference;
  int64_t n = 0, k = 0;
  std::vector<int8_t> weights;      // copy of b [N, K] (the reference path reads it)
  std::shared_ptr<uint8_t> packed;  // 64-byte aligned, see qgemm_vnni.cc, qgemm_avx2.cc
};

/// Packs p.b ([p.n, p.k]) for QGemm; kFastest picks the VNNI layout when QInt8HasVnni(), else
/// the AVX2 one when QInt8HasAvx2(); kAvx2 picks the AVX2 one when QInt8HasAvx2().
PackedQGemmWeights PackQGemmWeights(const QGemmParams& p, QKernelPath path = QKernelPath::kFastest);

/// The contract on p.a, weights `w` (packed for p.n, p.k; p.b is ignored), p.bias and
/// p.multiplier, written to p.y. No allocation; p.num_threads threads of the pool.
void QGemm(const QGemmParams& p, const PackedQGemmWeights& w);

/// The contract itself, in plain scalar C++ over p.b (any CPU).
void QGemmReference(const QGemmParams& p);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_QGEMM_H_
