// int8 elementwise kernels of the int8 runtime: Quantize (fp32 -> int8), Dequantize, Requantize
// (int8 scale change), quantized Add, and fp32 <-> fp16 buffer conversion.
//
// Each op has a scalar reference (`...Reference`, one thread, the per-element formula of
// support/quantize.h) and a dispatching entry point that runs an AVX-512 path when the CPU has
// avx512f/bw/vl, else the same scalar loop, split over threads for tensors of 64k elements or
// more. Both give the same bits (tests/backend_cpu/int8_elementwise_test.cc).
#ifndef QCC_KERNELS_CPU_QELEMENTWISE_H_
#define QCC_KERNELS_CPU_QELEMENTWISE_H_

#include <cstdint>

namespace qcc::cpu {

/// Per-tensor int8 quantization of an fp32 tensor (ONNX QuantizeLinear / DequantizeLinear).
struct QuantizeS8Params {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

/// int8 -> int8 scale change: y = Saturate(float(x - zp_in) * multiplier, zp_out, lo, hi), with
/// multiplier = RescaleMultiplier(s_in, s_out). [lo, hi] narrows [-128, 127] for a fused clamp.
struct RequantizeS8Params {
  int32_t zp_in = 0;
  float multiplier = 1.0f;
  int32_t zp_out = 0;
  int32_t lo = -128, hi = 127;
};

/// Quantized Add of two same-shape int8 tensors (no broadcasting):
/// y = Saturate((float(a - zp_a) * mult_a) + (float(b - zp_b) * mult_b), zp_out, lo, hi), with
/// mult_a = RescaleMultiplier(s_a, s_y) and mult_b = RescaleMultiplier(s_b, s_y); a fused ReLU
/// sets lo = max(-128, zp_out).
struct AddS8Params {
  int32_t zp_a = 0;
  float mult_a = 1.0f;
  int32_t zp_b = 0;
  float mult_b = 1.0f;
  int32_t zp_out = 0;
  int32_t lo = -128, hi = 127;
};

/// True when the CPU runs the AVX-512 int8 paths (avx512f, avx512bw and avx512vl).
bool CpuHasAvx512Int8();

/// The range of x[0, n) with 0 included: *lo = min(0, x...), *hi = max(0, x...); NaN is
/// skipped (dynamic quantization's per-run range). Exact, so the split over threads and the ISA
/// do not change it.
void RangeF32(int64_t n, const float* x, float* lo, float* hi, int num_threads);

/// Symmetric int8 per row (the dynamic GEMM's activations, attention's Q and K): `rows` rows of
/// n floats (row stride ld) to rows of out_n bytes (zero past n), q = round(x * 127 / max|x|)
/// clamped to +-127, with scale[r] = max|x| / 127 and, when `sum` is not null, sum[r] the row's
/// byte sum. A row whose max|x| is under 127 / FLT_MAX quantizes to 0. Returns false when a value
/// is not finite (the rows' bytes are then unspecified). One thread; the AVX-512 path (avx512f/
/// bw/vl) and the reference give the same bits.
bool QuantizeRowsS8(const float* x, int64_t rows, int64_t n, int64_t ld, int8_t* out, int64_t out_n,
                    float* scale, int32_t* sum);
bool QuantizeRowsS8Reference(const float* x, int64_t rows, int64_t n, int64_t ld, int8_t* out,
                             int64_t out_n, float* scale, int32_t* sum);

/// y[i] = QuantizeValue(x[i], scale, zero_point) for i in [0, n): x / scale, never x * (1/scale);
/// NaN gives the zero point, +-inf and huge values saturate.
void QuantizeF32ToS8(const QuantizeS8Params& p, int64_t n, const float* x, int8_t* y,
                     int num_threads);
void QuantizeF32ToS8Reference(const QuantizeS8Params& p, int64_t n, const float* x, int8_t* y);

/// y[i] = DequantizeValue(x[i], scale, zero_point) = float(x[i] - zero_point) * scale.
void DequantizeS8ToF32(const QuantizeS8Params& p, int64_t n, const int8_t* x, float* y,
                       int num_threads);
void DequantizeS8ToF32Reference(const QuantizeS8Params& p, int64_t n, const int8_t* x, float* y);

/// y[i] = RescaleValue(x[i], ...): see RequantizeS8Params. x and y may be the same buffer.
void RequantizeS8(const RequantizeS8Params& p, int64_t n, const int8_t* x, int8_t* y,
                  int num_threads);
void RequantizeS8Reference(const RequantizeS8Params& p, int64_t n, const int8_t* x, int8_t* y);

/// y[i] = AddValue(a[i], ..., b[i], ...): see AddS8Params. y may alias a or b.
void AddS8(const AddS8Params& p, int64_t n, const int8_t* a, const int8_t* b, int8_t* y,
           int num_threads);
void AddS8Reference(const AddS8Params& p, int64_t n, const int8_t* a, const int8_t* b, int8_t* y);

/// y[i] = FloatToHalf(x[i]) (round to nearest even; every NaN becomes the quiet NaN of its sign,
/// 0x7e00 / 0xfe00, as FloatToHalf does, although the hardware would keep the payload).
void ConvertF32ToF16(int64_t n, const float* x, uint16_t* y, int num_threads);
void ConvertF32ToF16Reference(int64_t n, const float* x, uint16_t* y);

/// y[i] = HalfToFloat(x[i]) (exact; a NaN keeps its payload and its quiet bit as it is, as
/// HalfToFloat does, although the hardware would set the quiet bit).
void ConvertF16ToF32(int64_t n, const uint16_t* x, float* y, int num_threads);
void ConvertF16ToF32Reference(int64_t n, const uint16_t* x, float* y);

/// x[i] = HalfToFloat(FloatToHalf(x[i])) in place: the fp32 values of an fp16 tensor without
/// writing the tensor (ConvertF32ToF16, then ConvertF16ToF32, through a small buffer).
void RoundF32ToF16InPlace(int64_t n, float* x, int num_threads);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_QELEMENTWISE_H_
