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
  // Top-1 agreement is a classifier's measure: a row of scores along one axis ([N, C] or
  // [N, C, 1, 1]). A detector's map [N, 1, H, W] has no class to agree on.
  int score_axes = 0;
  for (int64_t a = 1; a < ref.rank(); ++a) score_axes += ref.dim(a) > 1 ? 1 : 0;
  if (ref.rank() >= 2 && per_row > 1 && score_axes == 1) {
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
  std::string s =
      absl::StrFormat("sqnr_db=%.2f cosine=%.5f max_abs=%.4g", sqnr_db(), cosine(), max_abs_);
  if (rows_ > 0) absl::StrAppendFormat(&s, " agreement=%.4f", top1_agreement());
  return s;
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

void RetrievalMetrics::Add(const Tensor& ref, const Tensor& got) {
  if (ref.rank() == 0 || ref.dim(0) == 0) return;
  const int64_t dim = ref.numel() / ref.dim(0);
  if (dim_ == 0) dim_ = dim;
  if (dim != dim_ || got.numel() != ref.numel()) {  // one embedding size per run
    consistent_ = false;
    return;
  }
  ref_.insert(ref_.end(), ref.data<float>(), ref.data<float>() + ref.numel());
  got_.insert(got_.end(), got.data<float>(), got.data<float>() + got.numel());
}

std::vector<int64_t> RetrievalMetrics::Nearest(std::vector<float>& rows) const {
  const int64_t n = static_cast<int64_t>(rows.size()) / dim_;
  for (int64_t r = 0; r < n; ++r) {
    float* v = rows.data() + r * dim_;
    double norm = 0;
    for (int64_t k = 0; k < dim_; ++k) norm += static_cast<double>(v[k]) * v[k];
    const float inv = norm > 0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
    for (int64_t k = 0; k < dim_; ++k) v[k] *= inv;
  }
  std::vector<int64_t> nearest(pairs_);
  for (int64_t q = 0; q < pairs_; ++q) {
    const float* query = rows.data() + 2 * q * dim_;
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t d = 0; d < pairs_; ++d) {
      const float* doc = rows.data() + (2 * d + 1) * dim_;
      double dot = 0;
      for (int64_t k = 0; k < dim_; ++k) dot += static_cast<double>(query[k]) * doc[k];
      if (dot > best) best = dot, nearest[q] = d;  // ties: the first document
    }
  }
  return nearest;
}

void RetrievalMetrics::Finish() {
  pairs_ = dim_ > 0 ? static_cast<int64_t>(ref_.size()) / dim_ / 2 : 0;
  fp32_hits_ = plan_hits_ = same_ = 0;
  if (pairs_ == 0) return;
  const std::vector<int64_t> a = Nearest(ref_), b = Nearest(got_);
  for (int64_t q = 0; q < pairs_; ++q) {
    fp32_hits_ += a[q] == q;
    plan_hits_ += b[q] == q;
    same_ += a[q] == b[q];
  }
}

std::string RetrievalMetrics::Describe() const {
  return absl::StrFormat(
      "retrieval (%d pairs): recall@1 fp32 %.2f%% | plan %.2f%% (%+.2f points) | plan's nearest "
      "document = fp32's on %.2f%% of queries",
      pairs_, 100 * fp32_recall(), 100 * plan_recall(), 100 * (plan_recall() - fp32_recall()),
      100 * same_nearest());
}

}  // namespace qcc::tools
