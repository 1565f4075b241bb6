// fp32 normalizations: BatchNormalization (inference), InstanceNormalization, LayerNormalization.
#ifndef QCC_KERNELS_CPU_NORM_H_
#define QCC_KERNELS_CPU_NORM_H_

#include <cstdint>

namespace qcc::cpu {

/// Inference batch norm over x [batch, channels, size]: with a = scale / sqrt(var + eps) and
/// b = bias - mean * a per channel, y = a * x + b. `y` may alias `x`.
void BatchNormF32Inference(int64_t batch, int64_t channels, int64_t size, const float* x,
                           const float* scale, const float* bias, const float* mean,
                           const float* var, float epsilon, float* y, int num_threads);

/// Instance norm over x [batch, channels, size]: each (n, c) plane is normalised by its own
/// mean and (biased) variance, y = scale[c] * (x - mean) / sqrt(var + eps) + bias[c].
void InstanceNormF32(int64_t batch, int64_t channels, int64_t size, const float* x,
                     const float* scale, const float* bias, float epsilon, float* y,
                     int num_threads);

/// Layer norm over x [rows, cols]: each row is normalised by its mean and biased variance,
/// y = (x - mean) * inv_std * scale[j] + bias[j] with inv_std = 1 / sqrt(var + eps).
/// `bias`, `mean_out` and `inv_std_out` ([rows] each) may be null.
void LayerNormF32(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias,
                  float epsilon, float* y, float* mean_out, float* inv_std_out, int num_threads);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_NORM_H_
