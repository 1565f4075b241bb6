#include "backend_cpu/kernels/norm.h"

#include <cmath>

#include "backend_cpu/kernels/nn_parallel.h"

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

void LayerNormF32(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias,
                  float epsilon, float* y, float* mean_out, float* inv_std_out, int num_threads) {
  NnParallelFor(num_threads, rows, 3 * cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * cols;
      double mean, var;
      MeanVar(xr, cols, mean, var);
      const float m = static_cast<float>(mean);
      const float inv_std = static_cast<float>(1.0 / std::sqrt(var + epsilon));
      float* yr = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) {
        yr[j] = (xr[j] - m) * inv_std * scale[j] + (bias != nullptr ? bias[j] : 0.0f);
      }
      if (mean_out != nullptr) mean_out[r] = m;
      if (inv_std_out != nullptr) inv_std_out[r] = inv_std;
    }
  });
}

}  // namespace qcc::cpu
