#include "kernels/cpu/norm.h"

#include <cmath>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/simd_dispatch.h"

namespace qcc::cpu {

namespace {

/// Mean and biased variance of x[0, n), accumulated in double (two passes).
void MeanVar(const float* x, int64_t n, double& mean, double& var) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    sq += d * d;
  }
  var = n > 0 ? sq / static_cast<double>(n) : 0.0;
}

}  // namespace

void BatchNormF32Inference(int64_t batch, int64_t channels, int64_t size, const float* x,
                           const float* scale, const float* bias, const float* mean,
                           const float* var, float epsilon, float* y, int num_threads) {
  NnParallelFor(num_threads, batch * channels, size, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % channels;
      const float a = scale[c] / std::sqrt(var[c] + epsilon);
      const float b = bias[c] - mean[c] * a;
      const float* xp = x + plane * size;
      float* yp = y + plane * size;
      for (int64_t i = 0; i < size; ++i) yp[i] = a * xp[i] + b;
    }
  });
}

void InstanceNormF32(int64_t batch, int64_t channels, int64_t size, const float* x,
                     const float* scale, const float* bias, float epsilon, float* y,
                     int num_threads) {
  NnParallelFor(num_threads, batch * channels, 3 * size, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % channels;
      const float* xp = x + plane * size;
      double mean, var;
      MeanVar(xp, size, mean, var);
      const float a = static_cast<float>(scale[c] / std::sqrt(var + epsilon));
      const float b = static_cast<float>(bias[c] - mean * a);
      float* yp = y + plane * size;
      for (int64_t i = 0; i < size; ++i) yp[i] = a * xp[i] + b;
    }
  });
}

namespace {

/// sum of f(x[i]) over [0, n) in double, over 8 independent partial sums (a fixed order, so
/// the loop vectorizes and the result does not depend on the ISA).
template <typename F>
inline __attribute__((always_inline)) double Sum8(const float* x, int64_t n, F f) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += f(x[i + k]);
  }
  for (; i < n; ++i) s[0] += f(x[i]);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/// Rows [begin, end) of LayerNormF32 (a transformer runs two per block), in AVX-512, AVX2 and
/// baseline builds (simd_dispatch.h).
inline __attribute__((always_inline)) void LayerNormRowsBody(int64_t begin, int64_t end,
                                                             int64_t cols, const float* x,
                                                             const float* scale, const float* bias,
                                                             float epsilon, float* y,
                                                             float* mean_out, float* inv_std_out) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * cols;
    const double mean = cols > 0 ? Sum8(xr, cols, [](float v) { return double{v}; }) / cols : 0.0;
    const double var = cols > 0 ? Sum8(xr, cols,
                                       [mean](float v) {
                                         const double d = v - mean;
                                         return d * d;
                                       }) /
                                      cols
                                : 0.0;
    const float m = static_cast<float>(mean);
    const float inv_std = static_cast<float>(1.0 / std::sqrt(var + epsilon));
    float* yr = y + r * cols;
    if (bias != nullptr) {
      for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - m) * inv_std * scale[j] + bias[j];
    } else {
      for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - m) * inv_std * scale[j];
    }
    if (mean_out != nullptr) mean_out[r] = m;
    if (inv_std_out != nullptr) inv_std_out[r] = inv_std;
  }
}
QCC_SIMD_VARIANTS(void, LayerNormRows,
                  (int64_t begin, int64_t end, int64_t cols, const float* x, const float* scale,
                   const float* bias, float epsilon, float* y, float* mean_out, float* inv_std_out),
                  (begin, end, cols, x, scale, bias, epsilon, y, mean_out, inv_std_out))

}  // namespace

void LayerNormF32(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias,
                  float epsilon, float* y, float* mean_out, float* inv_std_out, int num_threads) {
  NnParallelFor(num_threads, rows, 3 * cols, [&](int64_t begin, int64_t end) {
    LayerNormRows(begin, end, cols, x, scale, bias, epsilon, y, mean_out, inv_std_out);
  });
}

}  // namespace qcc::cpu
