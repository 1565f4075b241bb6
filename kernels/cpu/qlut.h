// int8 lookup tables for the elementwise functions of the int8 runtime (ops.def's Int8 column
// Lut: Sigmoid, Tanh, HardSigmoid, HardSwish, Relu, Clip): a 256-entry table built once from
// the quantization parameters, then applied per byte (AVX-512 VBMI vpermt2b when the CPU has it, a
// scalar loop otherwise).
#ifndef QCC_KERNELS_CPU_QLUT_H_
#define QCC_KERNELS_CPU_QLUT_H_

#include <array>
#include <cstdint>

#include "support/unary_fn.h"

namespace qcc::cpu {

/// A table indexed by q + 128 for an int8 input q.
using Int8Lut = std::array<int8_t, 256>;

/// table[q + 128] = QuantizeValue(UnaryValue(call, DequantizeValue(q, s_in, zp_in)), s_out,
/// zp_out) for every int8 q: the function in fp32, as the fp32 kernels compute it
/// (support/unary_fn.h).
Int8Lut BuildLut(const UnaryCall& call, float s_in, int32_t zp_in, float s_out, int32_t zp_out);

/// True when ApplyLut takes its AVX-512 VBMI path on this CPU.
bool CpuHasAvx512Vbmi();

/// y[i] = table[x[i] + 128] for i in [0, n), split over threads from 64k elements up. x and y
/// may be the same buffer.
void ApplyLut(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y, int num_threads);
void ApplyLutReference(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_QLUT_H_
