// int8 lookup tables for the elementwise activations of the int8 runtime (Sigmoid, Tanh,
// HardSigmoid, HardSwish): a 256-entry table built once from the quantization parameters, then
// applied per byte (AVX-512 VBMI vpermt2b when the CPU has it, a scalar loop otherwise).
#ifndef QCC_BACKEND_CPU_KERNELS_QLUT_H_
#define QCC_BACKEND_CPU_KERNELS_QLUT_H_

#include <array>
#include <cstdint>

namespace qcc::cpu {

/// The activations a LUT implements.
enum class LutOp {
  kSigmoid,      // 1 / (1 + exp(-x))
  kTanh,         // tanh(x)
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, alpha * x + beta)), alpha = 1/6, beta = 0.5 (ONNX)
};

/// Attributes of the LutOp (only HardSigmoid reads them; ONNX defaults).
struct LutOpParams {
  float alpha = 0.2f;
  float beta = 0.5f;
};

/// A table indexed by q + 128 for an int8 input q.
using Int8Lut = std::array<int8_t, 256>;

/// f(x) in fp32 (no fused multiply-add): std::exp / std::tanh of <cmath> for Sigmoid and Tanh,
/// and for HardSwish ONNX's HardSigmoid<alpha = 1/6 (fp32), beta = 0.5> times x.
float EvalLutOp(LutOp op, const LutOpParams& params, float x);

/// table[q + 128] = QuantizeValue(EvalLutOp(op, params, DequantizeValue(q, s_in, zp_in)),
/// s_out, zp_out) for every int8 q.
Int8Lut BuildLut(LutOp op, const LutOpParams& params, float s_in, int32_t zp_in, float s_out,
                 int32_t zp_out);

/// True when ApplyLut takes its AVX-512 VBMI path on this CPU.
bool CpuHasAvx512Vbmi();

/// y[i] = table[x[i] + 128] for i in [0, n), split over threads from 64k elements up. x and y
/// may be the same buffer.
void ApplyLut(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y, int num_threads);
void ApplyLutReference(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_QLUT_H_
