// Accuracy metrics of `qcc compare`: how far a plan's outputs are from the fp32 model's.
#ifndef QCC_TOOLS_COMPARE_METRICS_H_
#define QCC_TOOLS_COMPARE_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "support/tensor.h"

namespace qcc::tools {

/// Streaming error statistics of one output, over any number of batches.
class OutputMetrics {
 public:
  explicit OutputMetrics(std::string name) : name_(std::move(name)) {}
  /// Adds one batch: `ref` (fp32 model) and `got` (plan), both f32 of the same shape. Rows are
  /// the leading axis; an output with more than one value per row also counts top-1 agreement.
  void Add(const Tensor& ref, const Tensor& got);
  /// 10 log10(sum ref^2 / sum (ref - got)^2); +inf when equal.
  double sqnr_db() const;
  /// sum(ref * got) / sqrt(sum ref^2 * sum got^2); 1 when both are zero.
  double cosine() const;
  double max_abs_error() const { return max_abs_; }
  /// Rows whose argmax agrees, over rows compared (0 rows: 1).
  double top1_agreement() const;
  /// "output 'logits': SQNR 25.31 dB, cosine 0.99853, max abs error 1.2, top-1 agreement 97.90%"
  std::string Describe() const;
  /// "sqnr_db=25.31 cosine=0.99853 max_abs=1.2 agreement=0.9790"
  std::string MachineFields() const;

 private:
  std::string name_;
  double signal_ = 0, noise_ = 0, dot_ = 0, got_energy_ = 0, max_abs_ = 0;
  int64_t rows_ = 0, agree_ = 0;
};

/// Labelled top-1 / top-5 accuracy of a classifier output.
class LabelledAccuracy {
 public:
  /// `scores` [N, C...] (row-major, C values per row), `labels` one per row (-1: unknown, skipped).
  void Add(const Tensor& scores, const std::vector<int>& labels);
  int64_t count() const { return count_; }
  double top1() const { return count_ ? static_cast<double>(top1_) / count_ : 0.0; }
  double top5() const { return count_ ? static_cast<double>(top5_) / count_ : 0.0; }
  /// Whether top-5 says anything: more than 5 classes (with 5 or fewer it is always 100%).
  bool has_top5() const { return classes_ > 5; }

 private:
  int64_t count_ = 0, top1_ = 0, top5_ = 0, classes_ = 0;
};

}  // namespace qcc::tools

#endif  // QCC_TOOLS_COMPARE_METRICS_H_
