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
  /// the leading axis; an output whose rows are scores along one axis ([N, C], [N, C, 1, 1])
  /// also counts top-1 agreement, others (a detector's map [N, 1, H, W]) do not.
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
  /// "sqnr_db=25.31 cosine=0.99853 max_abs=1.2 agreement=0.9790" (no agreement without score
  /// rows)
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

/// Retrieval agreement of an embedding model on query/document pairs: the samples come as
/// query 0, document 0, query 1, document 1, ... (the texts of a pairs file, in its order), and
/// each query's nearest document by cosine should be its own.
class RetrievalMetrics {
 public:
  /// Adds one batch of embeddings, `ref` (fp32 model) and `got` (plan), [rows, D...] f32, rows
  /// continuing the sample order.
  void Add(const Tensor& ref, const Tensor& got);
  /// Ranks every document for every query (after the last batch). Nothing when fewer than one
  /// pair was added.
  void Finish();
  int64_t pairs() const { return pairs_; }
  /// False when a batch's embeddings had another size than the first's (they were not added,
  /// and the pairing after them is off): the caller reports an error.
  bool consistent() const { return consistent_; }
  /// Queries whose nearest document is their own, over pairs: fp32's and the plan's.
  double fp32_recall() const { return Ratio(fp32_hits_); }
  double plan_recall() const { return Ratio(plan_hits_); }
  /// Queries whose nearest document under the plan is the one fp32 finds.
  double same_nearest() const { return Ratio(same_); }
  /// "retrieval (1000 pairs): recall@1 fp32 58.60% | plan 58.10% (-0.50 points) | plan's
  /// nearest document = fp32's on 96.20% of queries"
  std::string Describe() const;

 private:
  double Ratio(int64_t n) const { return pairs_ ? static_cast<double>(n) / pairs_ : 0.0; }
  /// The index of each query's nearest document in `rows` (L2-normalized in place).
  std::vector<int64_t> Nearest(std::vector<float>& rows) const;

  int64_t dim_ = 0;
  std::vector<float> ref_, got_;  // every row, in order
  int64_t pairs_ = 0, fp32_hits_ = 0, plan_hits_ = 0, same_ = 0;
  bool consistent_ = true;
};

}  // namespace qcc::tools

#endif  // QCC_TOOLS_COMPARE_METRICS_H_
