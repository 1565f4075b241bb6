#include "tools/compare_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace qcc::tools {
namespace {

int64_t ArgMax(const float* row, int64_t n) {
  return static_cast<int64_t>(std::max_element(row, row + n) - row);
}

}  // namespace

void OutputMetrics::Add(const Tensor& ref, const Tensor& got) {
  const float* r = ref.data<float>();
  const float* g = got.data<float>();
  const int64_t n = ref.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double a = r[i], b = g[i];
    signal_ += a * a;
    noise_ += (a - b) * (a - b);
    dot_ += a * b;
    got_energy_ += b * b;
    max_abs_ = std::max(max_abs_, std::fabs(a - b));
  }
  const int64_t rows = ref.rank() > 0 ? ref.dim(0) : 1;
  const int64_t per_row = rows > 0 ? n / rows : 0;
  if (ref.rank() >= 2 && per_row > 1) {
    for (int64_t row = 0; row < rows; ++row) {
      agree_ += ArgMax(r + row * per_row, per_row) == ArgMax(g + row * per_row, per_row);
    }
    rows_ += rows;
  }
}

double OutputMetrics::sqnr_db() const {
  if (noise_ == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal_ / noise_);
}

double OutputMetrics::cosine() const {
  if (signal_ == 0 && got_energy_ == 0) return 1.0;
  if (signal_ == 0 || got_energy_ == 0) return 0.0;
  return dot_ / std::sqrt(signal_ * got_energy_);
}

double OutputMetrics::top1_agreement() const {
  return rows_ ? static_cast<double>(agree_) / static_cast<double>(rows_) : 1.0;
}

std::string OutputMetrics::Describe() const {
  std::string s = absl::StrFormat("output '%s': SQNR %.2f dB, cosine %.5f, max abs error %.4g",
                                  name_, sqnr_db(), cosine(), max_abs_);
  if (rows_ > 0) absl::StrAppendFormat(&s, ", top-1 agreement %.2f%%", 100 * top1_agreement());
  return s;
}

std::string OutputMetrics::MachineFields() const {
  return absl::StrFormat("sqnr_db=%.2f cosine=%.5f max_abs=%.4g agreement=%.4f", sqnr_db(),
                         cosine(), max_abs_, top1_agreement());
}

void LabelledAccuracy::Add(const Tensor& scores, const std::vector<int>& labels) {
  const int64_t rows = static_cast<int64_t>(labels.size());
  if (rows == 0) return;
  const int64_t per_row = scores.numel() / rows;
  classes_ = std::max(classes_, per_row);
  const float* s = scores.data<float>();
  for (int64_t row = 0; row < rows; ++row) {
    const int label = labels[row];
    if (label < 0 || label >= per_row) continue;
    const float* r = s + row * per_row;
    // Rank of the true class: how many classes score strictly higher (ties go to the label).
    int64_t higher = 0;
    for (int64_t c = 0; c < per_row; ++c) higher += r[c] > r[label];
    ++count_;
    top1_ += higher == 0;
    top5_ += higher < 5;
  }
}

}  // namespace qcc::tools
